import type { Server } from 'bun'
import { type ChangesQuery, changeObject, includedRecord, nextLink } from '../../jsonapi/changes'
import type { ResourceRegistry } from '../../resources/registry'
import type { ChangedRecord, ChangeFeed } from '../../service/change-feed'
import { holdsWeakTag, unchangedSinceStreamed } from '../conditional'
import {
  type ApiResponse,
  documentResponse,
  jsonApiResponse,
  READ_CACHE_CONTROL,
  type ResponseSettings,
  send,
} from '../responses'
import { INCLUDED_BATCH } from '../streaming/document-stream'
import { IdSet } from '../streaming/id-set'
import { LIST_BATCH } from '../streaming/list-reader'
import { heldUntilSent, type LongAnswers } from '../streaming/long-answers'

/**
 * A page of at most this many changes is read at once and answered whole, as a list's bounded page
 * is: its size is bounded whatever the data (a change record, and with include one record of
 * to-one linkage each). A larger one (MAX_PAGE_SIZE may be 100,000) is a long answer.
 */
export const LONG_PAGE = LIST_BATCH

/** How many changes a long page reads from the store at a time. */
export const PAGE_BATCH = LIST_BATCH

interface ChangePagesOptions {
  readonly registry: ResourceRegistry
  readonly feed: ChangeFeed
  /** The feed's path, which links.next starts with. */
  readonly path: string
  readonly longAnswers: LongAnswers
}

/**
 * The pages of GET /api/v1/changes as JSON:API documents. A page of up to LONG_PAGE changes is
 * read, then written at once. A longer one is a long answer, as a whole list is
 * (streaming/long-answers.ts): it takes a slot of its client before anything is read (503 with
 * Retry-After past the caps), reads the window a batch at a time and writes each batch as it
 * goes, then `included` a batch of records at a time, then links and meta (meta.latest read after
 * the window, as for a page read at once). Between batches it keeps only ids, so its memory
 * follows the batch, not the page; its text is the one the page read at once would have (the same
 * members in the same order). Like a streamed list, it is tagged weakly by what it was read at.
 */
export class ChangePages {
  constructor(private readonly options: ChangePagesOptions) {}

  async answer(
    query: ChangesQuery,
    request: Request,
    set: ResponseSettings,
    server: Server<unknown> | null,
  ): Promise<string | ReadableStream<Uint8Array> | Uint8Array | null> {
    if (query.size <= LONG_PAGE) return send(set, await this.whole(query), request)
    const { feed, longAnswers } = this.options
    const noneMatch = request.headers.get('if-none-match')
    const state = { version: () => feed.version(query.after) }
    if (holdsWeakTag(noneMatch) && (await unchangedSinceStreamed(state, request, noneMatch, set))) return null
    const response = await longAnswers.run(request, server, async () => {
      const version = await state.version()
      return { ...(await documentResponse(200, this.pieces(query))), version }
    })
    const sent = send(set, response, request)
    return response.release ? heldUntilSent(sent, response.release) : sent
  }

  /** A page read at once. */
  private async whole(query: ChangesQuery): Promise<ApiResponse> {
    const { registry, feed, path } = this.options
    const window = await feed.page(query)
    const document = {
      data: window.changes.map(changeObject),
      ...(query.includeResources
        ? { included: window.included.map(({ resource, record }) => includedRecord(registry, resource, record)) }
        : {}),
      links: { next: nextLink(path, query, window.next) },
      meta: { latest: window.latest },
    }
    return jsonApiResponse(200, document, { 'cache-control': READ_CACHE_CONTROL })
  }

  /**
   * A long page's text, a piece per batch: what JSON.stringify gives for the document `whole`
   * builds, each member written by JSON.stringify as it would write it there.
   */
  private async *pieces(query: ChangesQuery): AsyncGenerator<string> {
    const { registry, feed, path } = this.options
    const firsts = query.includeResources ? new FirstChanges() : null
    let parts: string[] = ['{"data":[']
    let separator = ''
    let next = ''
    for await (const batch of feed.batches(query, PAGE_BATCH)) {
      for (const change of batch.changes) {
        parts.push(separator, JSON.stringify(changeObject(change)))
        separator = ','
        firsts?.add(change)
      }
      next = batch.next
      if (batch.changes.length > 0) {
        yield parts.join('')
        parts = []
      }
      await otherRequests()
    }
    parts.push(']')
    if (firsts) {
      parts.push(',"included":[')
      separator = ''
      for (const records of firsts.batches(INCLUDED_BATCH)) {
        for (const { resource, record } of await feed.included(records)) {
          parts.push(separator, JSON.stringify(includedRecord(registry, resource, record)))
          separator = ','
        }
        // None at all when every record of the batch has been deleted since.
        if (parts.length > 0) yield parts.join('')
        parts = []
        await otherRequests()
      }
      parts.push(']')
    }
    // After the window, as for a page read at once: never older than its last change.
    const latest = await feed.latest()
    parts.push(`,"links":${JSON.stringify({ next: nextLink(path, query, next) })}`)
    parts.push(`,"meta":${JSON.stringify({ latest })}}`)
    yield parts.join('')
  }
}

/**
 * A turn of the event loop for the other requests, between two batches. SQLite's reads are
 * synchronous on this thread, and Bun asks for the next piece of an answer as soon as it has
 * written the last: without it, a page would be read and written whole before any other request
 * was taken (measured: GET /books/1 waited 6 to 8 s beside 10 pages of 100,000 changes).
 */
function otherRequests(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

/**
 * The records a long page's changes name, each once, in the order of its first change: what
 * `included` lists, kept as ids (a bitmap per type to know those seen, and 9 bytes a record for
 * the order) rather than as the page's changes.
 */
class FirstChanges {
  private readonly types: string[] = []
  private readonly seen: IdSet[] = []
  private ids = new Float64Array(1024)
  /** The index in `types` of each record's type. */
  private typeOf = new Uint8Array(1024)
  private count = 0

  add({ type, recordId }: ChangedRecord): void {
    let index = this.types.indexOf(type)
    if (index === -1) {
      index = this.types.push(type) - 1
      this.seen.push(new IdSet())
    }
    const seen = this.seen[index] as IdSet
    if (seen.has(recordId)) return
    seen.add(recordId)
    if (this.count === this.ids.length) {
      const ids = new Float64Array(this.count * 2)
      ids.set(this.ids)
      this.ids = ids
      const typeOf = new Uint8Array(this.count * 2)
      typeOf.set(this.typeOf)
      this.typeOf = typeOf
    }
    this.ids[this.count] = recordId
    this.typeOf[this.count] = index
    this.count++
  }

  /** The records in order, `size` at a time. */
  *batches(size: number): Generator<ChangedRecord[]> {
    for (let from = 0; from < this.count; from += size) {
      const batch: ChangedRecord[] = []
      for (let at = from; at < Math.min(from + size, this.count); at++) {
        batch.push({ type: this.types[this.typeOf[at] as number] as string, recordId: this.ids[at] as number })
      }
      yield batch
    }
  }
}
