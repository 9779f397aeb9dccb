import { httpError, type JsonApiError } from '../jsonapi/errors'
import type { Change } from '../model/changes'
import { START_OF_FEED } from '../model/changes'
import type { ResourceDescription } from '../model/description'
import type { StoredRecord } from '../model/record'
import type { ResourceRegistry } from '../resources/registry'
import type { Store } from '../store/store'

/** A window of the feed as the service answers it. */
export interface ChangesPage {
  readonly changes: readonly Change[]
  /** The position to ask after next: past every change read (and kept), or the one asked after. */
  readonly next: string
  /** The newest change that can be read, or null. */
  readonly latest: string | null
  /** With include: the records changed that still exist, each once, in the order of their first change. */
  readonly included: readonly { readonly resource: ResourceDescription; readonly record: StoredRecord }[]
}

/** A record a change names: what `included` is read from. */
export type ChangedRecord = Pick<Change, 'type' | 'recordId'>

/** What the feed asks of a window, as parsed from a request (jsonapi/changes.ts). */
export interface FeedWindow {
  readonly after: string | null
  readonly size: number
  readonly types: readonly string[] | null
  readonly includeResources: boolean
}

/**
 * 410: the changes after the position asked for were pruned (CHANGES_RETENTION), or it is not of
 * this feed's history (the database was restored, copied or re-created since: docs/changes.md).
 */
export function feedGone(): JsonApiError {
  return httpError(
    410,
    'The changes after this id are no longer kept, or the id is from before the database was restored, copied or re-created: read the lists again, then follow the feed from its meta.latest',
  )
}

/**
 * The rules of GET /api/v1/changes: a window read from the store's change log, and where a live
 * stream starts. Shared by the page and the stream.
 */
export class ChangeFeed {
  constructor(
    private readonly registry: ResourceRegistry,
    private readonly store: Store,
  ) {}

  async page(window: FeedWindow): Promise<ChangesPage> {
    const read = await this.store.changes.read({ after: window.after, types: window.types, size: window.size })
    if (read.kind === 'gone') throw feedGone()
    // Read after the window (not beside it): the newest change is then never older than the page's last.
    const latest = await this.store.changes.latest()
    const included = window.includeResources ? await this.included(read.changes) : []
    return { changes: read.changes, next: read.next, latest, included }
  }

  /**
   * The window of `page`, read `batch` rows at a time (a page too long to hold at once): each read
   * after the last one's `next`, as a follower walking links.next would, so each change comes once
   * and in order, until `size` rows are read or the feed has no more, where one read would have
   * stopped. At least one batch, which may be empty; the last one's `next` is the window's.
   * Read `latest` after the last batch: as for a page, never older than its last change.
   */
  async *batches(window: FeedWindow, batch: number): AsyncGenerator<{ changes: readonly Change[]; next: string }> {
    let after = window.after
    let left = window.size
    for (;;) {
      const size = Math.min(batch, left)
      const read = await this.store.changes.read({ after, types: window.types, size })
      if (read.kind === 'gone') throw feedGone()
      yield read
      left -= read.rows
      if (left <= 0 || read.rows < size) return
      after = read.next
    }
  }

  /** The newest change that can be read, or null. */
  latest(): Promise<string | null> {
    return this.store.changes.latest()
  }

  /**
   * What a long page's weak ETag stands for, read before the page: the store's version (the
   * records, and every commit), the newest change that can be read (on PostgreSQL a committed
   * change becomes readable only once older transactions end, which need not change the version)
   * and the first position after `after` (pruning moves it and changes no version). Null when
   * there is none, or the position is gone: no tag, and the page answers 410.
   */
  async version(after: string | null): Promise<string | null> {
    const version = await this.store.version()
    if (version === null) return null
    const latest = await this.store.changes.latest()
    const first = await this.store.changes.read({ after, types: null, size: 1 })
    return first.kind === 'gone' ? null : `${version} ${latest} ${first.next}`
  }

  /** Where a stream starts: after `after` (410 when pruned past it), or after the newest change now. */
  async streamStart(after: string | null): Promise<string> {
    if (after === null) return (await this.store.changes.latest()) ?? START_OF_FEED
    const read = await this.store.changes.read({ after, types: null, size: 1 })
    if (read.kind === 'gone') throw feedGone()
    return after
  }

  /**
   * The current state of each changed record that still exists, each once, in the order of their
   * first change: one read per type.
   */
  async included(changes: readonly ChangedRecord[]): Promise<ChangesPage['included']> {
    const idsByType = new Map<string, Set<number>>()
    for (const change of changes) {
      const ids = idsByType.get(change.type) ?? new Set<number>()
      ids.add(change.recordId)
      idsByType.set(change.type, ids)
    }
    const found = new Map<string, StoredRecord>()
    await Promise.all(
      [...idsByType].map(async ([type, ids]) => {
        for (const record of await this.store.findMany(this.registry.get(type), [...ids])) {
          found.set(`${type}/${record.id}`, record)
        }
      }),
    )
    const included: { resource: ResourceDescription; record: StoredRecord }[] = []
    const seen = new Set<string>()
    for (const change of changes) {
      const key = `${change.type}/${change.recordId}`
      const record = found.get(key)
      if (!record || seen.has(key)) continue
      seen.add(key)
      included.push({ resource: this.registry.get(change.type), record })
    }
    return included
  }
}
