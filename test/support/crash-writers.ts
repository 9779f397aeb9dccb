import type { CrashType, KnownRecord, Ledger, PendingWrite } from './crash-ledger'
import { WAIT_MS } from './process'

/*
 * The crash harness's writers: loops that send one write after another over HTTP, each answered
 * write entered in the ledger, until the service is killed under them. A writer renames and
 * deletes only the records it owns, so the writes on one record have one order; new books take any
 * writer's authors and collections, which are never deleted.
 */

const JSON_API = 'application/vnd.api+json'
const ATOMIC = `${JSON_API};ext="https://jsonapi.org/ext/atomic"`

/** What one writer loop did. */
export interface WriterOutcome {
  /** Writes answered with a 2xx. */
  readonly acknowledged: number
  /** The write it had sent when the service went away, if any. */
  readonly pending: PendingWrite | null
  /** Answers other than a 2xx, and failures while the service was still up. */
  readonly unexpected: string[]
}

export interface WriterContext {
  readonly base: string
  readonly ledger: Ledger
  readonly owner: number
  /** True once the service has been killed: send nothing more. */
  readonly killed: () => boolean
  /** Bounds on the loop, should the kill never come. */
  readonly maxWrites: number
  readonly deadline: number
}

interface Answer {
  readonly status: number
  readonly location: string | null
  /** The parsed body; undefined when there is none or it could not be read. */
  // biome-ignore lint/suspicious/noExplicitAny: answers are read field by field and checked
  readonly body: any
  readonly text: string
}

/** One write: the request, what it may have done if never answered, and what an answer means. */
interface Write {
  readonly method: 'POST' | 'PATCH' | 'DELETE'
  readonly path: string
  readonly body?: unknown
  readonly atomic?: boolean
  readonly pending: PendingWrite
  /** Enters the acknowledged write in the ledger; returns a complaint when the answer is not what was sent. */
  readonly acknowledge: (answer: Answer, at: number, ack: string) => string | undefined
}

const singular: Readonly<Record<CrashType, string>> = {
  authors: 'author',
  book_collections: 'book_collection',
  books: 'book',
}

function nameIn(answer: Answer, sent: string): string | undefined {
  if (answer.body === undefined) return undefined
  const name = answer.body?.data?.attributes?.name
  return name === sent ? undefined : `answered the name ${JSON.stringify(name)}, sent "${sent}"`
}

function create(ctx: WriterContext, type: CrashType): Write {
  const { ledger, owner } = ctx
  const name = ledger.newName(type)
  let author: KnownRecord | undefined
  let collection: KnownRecord | undefined
  const relationships: Record<string, unknown> = {}
  if (type === 'books') {
    author = ledger.anyLive('authors')
    if (!author) return create(ctx, 'authors')
    relationships.author = { data: { type: 'authors', id: author.id } }
    collection = Math.random() < 0.5 ? ledger.anyLive('book_collections') : undefined
    if (collection) relationships.book_collection = { data: { type: 'book_collections', id: collection.id } }
  }
  const fields = { type, name, author: author?.id ?? null, collection: collection?.id ?? null, owner }
  return {
    method: 'POST',
    path: `/api/v1/${type}`,
    body: { data: { type: singular[type], attributes: { name }, relationships } },
    pending: { kind: 'create', ...fields },
    acknowledge(answer, at, ack) {
      const id = answer.location?.slice(answer.location.lastIndexOf('/') + 1)
      if (!id) return 'answered without a Location'
      ledger.created({ ...fields, id, batch: null, touchedAt: at, lastAck: ack })
      return nameIn(answer, name)
    },
  }
}

function rename(ctx: WriterContext, record: KnownRecord): Write {
  const name = ctx.ledger.newName(record.type)
  return {
    method: 'PATCH',
    path: `/api/v1/${record.type}/${record.id}`,
    body: { data: { type: record.type, id: record.id, attributes: { name } } },
    pending: { kind: 'rename', record, name },
    acknowledge(answer, at, ack) {
      ctx.ledger.renamed(record, name, at, ack)
      return nameIn(answer, name)
    },
  }
}

function remove(ctx: WriterContext, record: KnownRecord): Write {
  return {
    method: 'DELETE',
    path: `/api/v1/${record.type}/${record.id}`,
    pending: { kind: 'delete', record },
    acknowledge(_answer, at, ack) {
      ctx.ledger.deleted(record, at, ack)
      return undefined
    },
  }
}

/** One atomic request: an author and two books of theirs. */
function atomicBatch(ctx: WriterContext): Write {
  const { ledger, owner } = ctx
  const batch = ledger.newBatch()
  const author = ledger.newName('authors')
  const books = [ledger.newName('books'), ledger.newName('books')] as const
  const lid = `author-${batch}`
  const book = (name: string) => ({
    op: 'add',
    data: { type: 'books', attributes: { name }, relationships: { author: { data: { type: 'authors', lid } } } },
  })
  return {
    method: 'POST',
    path: '/api/v1/operations',
    atomic: true,
    body: {
      'atomic:operations': [
        { op: 'add', data: { type: 'authors', lid, attributes: { name: author } } },
        ...books.map(book),
      ],
    },
    pending: { kind: 'atomic', batch, author, books, owner, acknowledged: false },
    acknowledge(answer, at, ack) {
      const ids: unknown[] = (answer.body?.['atomic:results'] ?? []).map(
        (result: { data?: { id?: unknown } }) => result.data?.id,
      )
      const [authorId, ...bookIds] = ids
      if (ids.length !== 3 || !ids.every((id) => typeof id === 'string')) {
        return `answered ${answer.text.slice(0, 200)}`
      }
      const common = { owner, batch, touchedAt: at, lastAck: ack, collection: null }
      ledger.created({ ...common, type: 'authors', id: authorId as string, name: author, author: null })
      bookIds.forEach((id, i) => {
        const name = books[i] as string
        ledger.created({ ...common, type: 'books', id: id as string, name, author: authorId as string })
      })
      return undefined
    },
  }
}

/** The next write, drawn from a fixed mix; a rename or delete with nothing owned to act on creates instead. */
function nextWrite(ctx: WriterContext): Write {
  const draw = Math.random()
  const owned = (type: CrashType, act: (record: KnownRecord) => Write) => {
    const record = ctx.ledger.ownedBy(ctx.owner, type)
    return record ? act(record) : create(ctx, type)
  }
  if (draw < 0.15) return create(ctx, 'authors')
  if (draw < 0.2) return create(ctx, 'book_collections')
  if (draw < 0.5) return create(ctx, 'books')
  if (draw < 0.6) return owned('authors', (r) => rename(ctx, r))
  if (draw < 0.65) return owned('book_collections', (r) => rename(ctx, r))
  if (draw < 0.77) return owned('books', (r) => rename(ctx, r))
  if (draw < 0.9) return owned('books', (r) => remove(ctx, r))
  return atomicBatch(ctx)
}

async function send(base: string, write: Write): Promise<Answer> {
  const type = write.atomic ? ATOMIC : JSON_API
  const headers: Record<string, string> = { accept: type }
  if (write.body !== undefined) headers['content-type'] = type
  const response = await fetch(base + write.path, {
    method: write.method,
    headers,
    body: write.body === undefined ? undefined : JSON.stringify(write.body),
    signal: AbortSignal.timeout(WAIT_MS),
  })
  const location = response.headers.get('location')
  // A body cut off by the kill leaves the status, which already says whether the write was stored.
  const text = await response.text().catch(() => undefined)
  let body: unknown
  try {
    body = text ? JSON.parse(text) : undefined
  } catch {
    body = undefined
  }
  return { status: response.status, location, body, text: text ?? '' }
}

/** Sends writes one after another until the service is killed (or a bound is reached). */
export async function runWriter(ctx: WriterContext): Promise<WriterOutcome> {
  const unexpected: string[] = []
  let acknowledged = 0
  for (let n = 0; n < ctx.maxWrites && !ctx.killed() && performance.now() < ctx.deadline; n++) {
    const write = nextWrite(ctx)
    const request = `${write.method} ${write.path}`
    let answer: Answer
    try {
      answer = await send(ctx.base, write)
    } catch (error) {
      if (!ctx.killed()) unexpected.push(`${request} failed while the service was up: ${(error as Error).message}`)
      return { acknowledged, pending: write.pending, unexpected }
    }
    if (answer.status < 200 || answer.status > 299) {
      unexpected.push(`${request} answered ${answer.status}: ${answer.text.slice(0, 300)}`)
      continue
    }
    const at = performance.now()
    acknowledged++
    if (write.pending.kind === 'atomic' && answer.body === undefined) {
      // Stored (the answer said so) but which ids it got is unknown: settled by name after the restart.
      return { acknowledged, pending: { ...write.pending, acknowledged: true }, unexpected }
    }
    const ack = `${request} answered ${answer.status} ${answer.text.slice(0, 160)} at ${Math.round(at)} ms`
    const complaint = write.acknowledge(answer, at, ack)
    if (complaint) unexpected.push(`${request} ${complaint}`)
  }
  return { acknowledged, pending: null, unexpected }
}
