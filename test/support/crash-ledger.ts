/*
 * What the crash harness's writers were told: every record an acknowledged write created, renamed
 * or deleted, and the writes still in flight when the service was killed. After a restart,
 * `reconcile` holds this against what the API lists and says what was lost, what is half there and
 * what nobody wrote; then it settles the in-flight writes by what it found, so the next round starts
 * from an exact picture.
 */

export type CrashType = 'authors' | 'book_collections' | 'books'
export const CRASH_TYPES: readonly CrashType[] = ['authors', 'book_collections', 'books']

/** The first word of every name of a type: a search for it must find every record of the type. */
export const MARKER: Readonly<Record<CrashType, string>> = {
  authors: 'Author',
  book_collections: 'Collection',
  books: 'Book',
}

/** A record some acknowledged write created, as the writes since then left it. */
export interface KnownRecord {
  readonly type: CrashType
  readonly id: string
  name: string
  /** Names acknowledged renames replaced: the search must have forgotten their words. */
  readonly formerNames: string[]
  /** A book's author and collection ids; null for the other types and for a book in no collection. */
  readonly author: string | null
  readonly collection: string | null
  /** The writer that may rename or delete it: one writer per record, so its writes have an order. */
  readonly owner: number
  /** The atomic batch that created it, if one did. */
  readonly batch: number | null
  deleted: boolean
  /** performance.now() of the last write that touched it. */
  touchedAt: number
  /** The last acknowledged write on it and what the service answered, for the report of a loss. */
  lastAck: string
}

/** A write that was sent but not acknowledged: the kill came first, so it may or may not be stored. */
export type PendingWrite =
  | {
      readonly kind: 'create'
      readonly type: CrashType
      readonly name: string
      readonly author: string | null
      readonly collection: string | null
      readonly owner: number
    }
  | { readonly kind: 'rename'; readonly record: KnownRecord; readonly name: string }
  | { readonly kind: 'delete'; readonly record: KnownRecord }
  | {
      readonly kind: 'atomic'
      readonly batch: number
      readonly author: string
      readonly books: readonly [string, string]
      readonly owner: number
      /** Answered 200 but its body could not be read: it must be there, whole. */
      readonly acknowledged: boolean
    }

/** A record as a GET list returned it. */
export interface ListedRecord {
  readonly id: string
  readonly name: string
  readonly author: string | null
  readonly collection: string | null
}

export type Listed = Readonly<Record<CrashType, ReadonlyMap<string, ListedRecord>>>

/** What `reconcile` found wrong; empty lists when every acknowledged write is there. */
export interface Discrepancies {
  /** Acknowledged effects that are missing: a created record gone, a rename undone, a deleted record back. */
  readonly lost: string[]
  /** Atomic batches of which only a part is stored. */
  readonly halfApplied: string[]
  /** Stored records that no write sent, or stored otherwise than sent. */
  readonly unaccounted: string[]
  /** How many in-flight writes turned out to be stored (counted up as they are found). */
  appliedInFlight: number
}

const TOKEN_START = 'abcdefghijklmnopqrstuvwxyz'
const TOKEN_REST = 'abcdefghijklmnopqrstuvwxyz0123456789'

const pick = (alphabet: string) => alphabet[Math.floor(Math.random() * alphabet.length)] as string

/** The distinct word of a name (`Author k3f9az` -> `k3f9az`), the one a search check looks for. */
export function distinctWord(name: string): string {
  return name.slice(name.lastIndexOf(' ') + 1)
}

const key = (type: CrashType, id: string) => `${type}/${id}`

export class Ledger {
  private readonly records = new Map<string, KnownRecord>()
  private readonly used = new Set<string>()
  /** Live authors and collections, for any writer's new books. */
  private readonly pools: Record<'authors' | 'book_collections', KnownRecord[]> = { authors: [], book_collections: [] }
  /** Per writer, the live records it may rename or delete. */
  private readonly owned = new Map<number, Record<CrashType, KnownRecord[]>>()
  private batches = 0

  /** A name no other record of the run had: the marker word and a random word of six letters and digits. */
  newName(type: CrashType): string {
    for (;;) {
      let token = pick(TOKEN_START)
      for (let i = 0; i < 5; i++) token += pick(TOKEN_REST)
      if (this.used.has(token)) continue
      this.used.add(token)
      return `${MARKER[type]} ${token}`
    }
  }

  newBatch(): number {
    return ++this.batches
  }

  /** A random live author or collection, or undefined when there is none yet. */
  anyLive(type: 'authors' | 'book_collections'): KnownRecord | undefined {
    const pool = this.pools[type]
    return pool[Math.floor(Math.random() * pool.length)]
  }

  /** A random live record of `type` that `owner` may change. */
  ownedBy(owner: number, type: CrashType): KnownRecord | undefined {
    const pool = this.ownedPools(owner)[type]
    return pool[Math.floor(Math.random() * pool.length)]
  }

  live(): KnownRecord[] {
    return [...this.records.values()].filter((r) => !r.deleted)
  }

  get(type: CrashType, id: string): KnownRecord | undefined {
    return this.records.get(key(type, id))
  }

  /** A create was acknowledged. */
  created(fields: Omit<KnownRecord, 'formerNames' | 'deleted'>): KnownRecord {
    const record: KnownRecord = { ...fields, formerNames: [], deleted: false }
    this.records.set(key(record.type, record.id), record)
    if (record.type !== 'books') this.pools[record.type].push(record)
    this.ownedPools(record.owner)[record.type].push(record)
    return record
  }

  /** A rename was acknowledged. */
  renamed(record: KnownRecord, name: string, at: number, ack: string): void {
    record.formerNames.push(record.name)
    record.name = name
    record.touchedAt = at
    record.lastAck = ack
  }

  /** A delete was acknowledged (or found applied, or a record found lost). */
  deleted(record: KnownRecord, at: number, ack: string): void {
    record.deleted = true
    record.touchedAt = at
    record.lastAck = ack
    if (record.type !== 'books') remove(this.pools[record.type], record)
    remove(this.ownedPools(record.owner)[record.type], record)
  }

  private ownedPools(owner: number): Record<CrashType, KnownRecord[]> {
    let pools = this.owned.get(owner)
    if (!pools) {
      pools = { authors: [], book_collections: [], books: [] }
      this.owned.set(owner, pools)
    }
    return pools
  }

  /**
   * Holds the ledger and the writes in flight at `killedAt` against what the API lists after the
   * restart, then brings the ledger in line with it.
   */
  reconcile(listed: Listed, pending: readonly PendingWrite[], killedAt: number): Discrepancies {
    const found: Discrepancies = { lost: [], halfApplied: [], unaccounted: [], appliedInFlight: 0 }
    const renames = new Map<KnownRecord, string>()
    const deletes = new Set<KnownRecord>()
    const creates = new Map<string, Extract<PendingWrite, { kind: 'create' }>>()
    for (const write of pending) {
      if (write.kind === 'rename') renames.set(write.record, write.name)
      else if (write.kind === 'delete') deletes.add(write.record)
      else if (write.kind === 'create') creates.set(key(write.type, write.name), write)
    }
    // Per acknowledged atomic batch, how many of its live records are stored and how many are lost.
    const batches = new Map<number, { kept: number; lost: number }>()
    const tally = (record: KnownRecord, outcome: 'kept' | 'lost') => {
      if (record.batch === null) return
      const counts = batches.get(record.batch) ?? { kept: 0, lost: 0 }
      counts[outcome]++
      batches.set(record.batch, counts)
    }
    for (const record of [...this.records.values()]) {
      const stored = listed[record.type].get(record.id)
      if (record.deleted) {
        if (stored) found.lost.push(`${describe(record)} is back after its acknowledged delete (${record.lastAck})`)
        continue
      }
      if (!stored) {
        if (deletes.has(record)) {
          this.deleted(record, killedAt, 'DELETE in flight at the kill, found applied')
          found.appliedInFlight++
          continue
        }
        found.lost.push(`${describe(record)} is missing (${record.lastAck})`)
        tally(record, 'lost')
        this.deleted(record, killedAt, 'lost')
        continue
      }
      tally(record, 'kept')
      if (stored.name !== record.name) {
        if (renames.get(record) === stored.name) {
          this.renamed(record, stored.name, killedAt, 'rename in flight at the kill, found applied')
          found.appliedInFlight++
        } else {
          found.lost.push(`${describe(record)} is named "${stored.name}" (${record.lastAck})`)
          this.renamed(record, stored.name, killedAt, 'found renamed')
        }
      }
      if (stored.author !== record.author || stored.collection !== record.collection) {
        found.lost.push(
          `${describe(record)} has author ${stored.author} and collection ${stored.collection}, acknowledged ${record.author} and ${record.collection}`,
        )
      }
    }
    for (const [batch, { kept, lost }] of batches) {
      if (kept > 0 && lost > 0)
        found.halfApplied.push(`atomic batch ${batch}: ${lost} of its records lost, ${kept} kept`)
    }

    // Stored records the ledger does not know: the creates and atomic batches in flight, or nobody's.
    const strangers = new Map<string, { type: CrashType; listed: ListedRecord }>()
    for (const type of CRASH_TYPES) {
      for (const stored of listed[type].values()) {
        if (!this.records.has(key(type, stored.id))) strangers.set(key(type, stored.name), { type, listed: stored })
      }
    }
    for (const write of pending) {
      if (write.kind === 'atomic') this.settleBatch(write, strangers, found, killedAt)
    }
    for (const [at, stranger] of strangers) {
      const write = creates.get(at)
      if (!write) {
        found.unaccounted.push(`${stranger.type} ${stranger.listed.id} "${stranger.listed.name}" was never sent`)
        continue
      }
      const { author, collection } = stranger.listed
      if (author !== write.author || collection !== write.collection) {
        found.unaccounted.push(
          `${write.type} ${stranger.listed.id} "${write.name}" has author ${author} and collection ${collection}, sent ${write.author} and ${write.collection}`,
        )
      }
      this.adopt(write.type, stranger.listed, write.owner, null, killedAt)
      found.appliedInFlight++
    }
    return found
  }

  /** An atomic batch in flight: its author and its two books are all stored, or none of them. */
  private settleBatch(
    write: Extract<PendingWrite, { kind: 'atomic' }>,
    strangers: Map<string, { type: CrashType; listed: ListedRecord }>,
    found: Discrepancies,
    killedAt: number,
  ): void {
    const author = strangers.get(key('authors', write.author))?.listed
    const books = write.books.map((name) => strangers.get(key('books', name))?.listed)
    const stored = [author, ...books].filter((r) => r !== undefined)
    strangers.delete(key('authors', write.author))
    for (const name of write.books) strangers.delete(key('books', name))
    if (stored.length === 0) {
      if (write.acknowledged) found.lost.push(`atomic batch ${write.batch} (answered 200) is missing`)
      return
    }
    if (stored.length < 3 || !author) {
      found.halfApplied.push(`atomic batch ${write.batch}: ${stored.length} of its 3 records stored`)
    } else if (books.some((book) => book?.author !== author.id)) {
      found.halfApplied.push(`atomic batch ${write.batch}: its books are not linked to its author ${author.id}`)
    }
    if (author) this.adopt('authors', author, write.owner, write.batch, killedAt)
    for (const book of books) if (book) this.adopt('books', book, write.owner, write.batch, killedAt)
    found.appliedInFlight++
  }

  private adopt(type: CrashType, listed: ListedRecord, owner: number, batch: number | null, at: number): void {
    const ack = 'in flight at the kill, found stored'
    this.created({
      type,
      id: listed.id,
      name: listed.name,
      author: listed.author,
      collection: listed.collection,
      owner,
      batch,
      touchedAt: at,
      lastAck: ack,
    })
  }
}

function describe(record: KnownRecord): string {
  return `${record.type} ${record.id} "${record.name}"`
}

function remove(pool: KnownRecord[], record: KnownRecord): void {
  const at = pool.indexOf(record)
  if (at === -1) return
  pool[at] = pool[pool.length - 1] as KnownRecord
  pool.pop()
}
