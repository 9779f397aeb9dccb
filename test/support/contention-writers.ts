import { seeded } from './feed-ledger'

/*
 * The writers of the PostgreSQL contention test (test/http/postgres-contention.test.ts), run as a
 * process of their own: `bun contention-writers.ts '<Plan as JSON>'`. It runs `plan.clients`
 * clients at once until `plan.ms` have passed, each sending one write at a time to the instances
 * in turn, all on the same few rows: the same 20 books moved whole between two authors
 * (POST /authors/{id}/relationships/books, the ids in a new order each time), books' authors and
 * collections PATCHed, collections' members added, removed and replaced, collections deleted
 * (their books' collection set null) and made again, and atomic batches of several of these. It
 * prints every answered write, as JSON, on one line at the end.
 */

export interface Plan {
  /** The instances' `.../api/v1` addresses. */
  readonly apis: readonly string[]
  /** The two authors the books move between. */
  readonly authors: readonly string[]
  /** The 20 books. */
  readonly books: readonly string[]
  readonly clients: number
  readonly ms: number
  /** Seeds the clients' choices; each process is given its own. */
  readonly seed: number
  /** Only the moves of the 20 books between the two authors (bench/standalone/write-contention.ts). */
  readonly movesOnly?: boolean
}

/** What a write did to one book, if it was acknowledged. */
export interface Effect {
  readonly book: string
  readonly author?: string
  /** A collection (or null) set outright. */
  readonly collection?: string | null
  /** The book left this collection if it was in it (a member removed, not kept by a replace, a deleted collection's). */
  readonly leaves?: string
}

/** One write and its answer. */
export interface Answered {
  readonly what: string
  readonly status: number
  /** Date.now() when it was sent and when its answer had been read. */
  readonly sent: number
  readonly answered: number
  /** Its effect on the books when acknowledged (2xx). */
  readonly effects: readonly Effect[]
  /** The error's detail, for a 5xx. */
  readonly detail?: string
}

const JSON_API = 'application/vnd.api+json'
const ATOMIC = `${JSON_API};ext="https://jsonapi.org/ext/atomic"`

interface Write {
  readonly what: string
  readonly method: string
  readonly path: string
  readonly body?: unknown
  readonly atomic?: boolean
  readonly effects: readonly Effect[]
  /** Reads the answer: a collection made, say. */
  readonly read?: (status: number, body: { data?: { id?: string } } | undefined) => void
}

const refs = (ids: readonly string[]) => ({ data: ids.map((id) => ({ type: 'books', id })) })

/** One client: its own collections (made and deleted), the shared authors and books. */
class Client {
  private readonly random: () => number
  private readonly own: string[] = []
  /** The highest collection id this client has seen: any collection up to it may be named (some are gone). */
  private highest = 0
  private turn = 0

  constructor(
    private readonly plan: Plan,
    seed: number,
  ) {
    this.random = seeded(seed)
  }

  private pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.random() * items.length)] as T
  }

  private some(count: number): string[] {
    return this.shuffled(this.plan.books).slice(0, count)
  }

  private shuffled<T>(items: readonly T[]): T[] {
    const list = [...items]
    for (let i = list.length - 1; i > 0; i--) {
      const j = Math.floor(this.random() * (i + 1))
      ;[list[i], list[j]] = [list[j] as T, list[i] as T]
    }
    return list
  }

  private anyCollection(): string {
    return String(1 + Math.floor(this.random() * Math.max(1, this.highest)))
  }

  private next(): Write {
    const draw = this.random()
    const { authors, books, movesOnly } = this.plan
    if (!movesOnly && (this.own.length < 2 || draw < 0.05)) {
      return {
        what: 'create collection',
        method: 'POST',
        path: '/book_collections',
        body: { data: { type: 'book_collections', attributes: { name: `Shelf ${this.plan.seed}.${this.turn}` } } },
        effects: [],
        read: (status, body) => {
          const id = body?.data?.id
          if (status === 201 && id) {
            this.own.push(id)
            this.highest = Math.max(this.highest, Number(id))
          }
        },
      }
    }
    if (movesOnly || draw < 0.35) {
      const author = this.pick(authors)
      return {
        what: 'move the 20 books',
        method: 'POST',
        path: `/authors/${author}/relationships/books`,
        body: refs(this.shuffled(books)),
        effects: books.map((book) => ({ book, author })),
      }
    }
    if (draw < 0.5) {
      const book = this.pick(books)
      const author = this.pick(authors)
      const collection = this.random() < 0.2 ? null : this.anyCollection()
      return {
        what: 'patch a book',
        method: 'PATCH',
        path: `/books/${book}`,
        body: {
          data: {
            type: 'books',
            id: book,
            attributes: {
              author_id: Number(author),
              book_collection_id: collection === null ? null : Number(collection),
            },
          },
        },
        effects: [{ book, author, collection }],
      }
    }
    const collection = this.random() < 0.5 ? this.pick(this.own) : this.anyCollection()
    const members = this.some(1 + Math.floor(this.random() * 6))
    const path = `/book_collections/${collection}/relationships/books`
    if (draw < 0.6) {
      return {
        what: 'add members',
        method: 'POST',
        path,
        body: refs(members),
        effects: members.map((book) => ({ book, collection })),
      }
    }
    if (draw < 0.67) {
      return {
        what: 'remove members',
        method: 'DELETE',
        path,
        body: refs(members),
        effects: members.map((book) => ({ book, leaves: collection })),
      }
    }
    if (draw < 0.74) {
      const kept = new Set(members)
      return {
        what: 'replace members',
        method: 'PATCH',
        path,
        body: refs(members),
        effects: books.map((book) => (kept.has(book) ? { book, collection } : { book, leaves: collection })),
      }
    }
    if (draw < 0.84) {
      const gone = this.own.shift() as string
      return {
        what: 'delete a collection',
        method: 'DELETE',
        path: `/book_collections/${gone}`,
        effects: books.map((book) => ({ book, leaves: gone })),
      }
    }
    // A batch: books' authors and collections set, in an order of its own, and members added.
    const author = this.pick(authors)
    const moved = this.some(3)
    const operations = [
      ...moved.map((book) => ({
        op: 'update',
        data: {
          type: 'books',
          id: book,
          relationships: {
            author: { data: { type: 'authors', id: author } },
            book_collection: { data: { type: 'book_collections', id: collection } },
          },
        },
      })),
      { op: 'add', ref: { type: 'book_collections', id: collection, relationship: 'books' }, data: refs(members).data },
    ]
    return {
      what: 'atomic batch',
      method: 'POST',
      path: '/operations',
      atomic: true,
      body: { 'atomic:operations': operations },
      effects: [
        ...moved.map((book) => ({ book, author, collection })),
        ...members.map((book) => ({ book, collection })),
      ],
    }
  }

  async run(until: number, answered: Answered[]): Promise<void> {
    while (Date.now() < until) {
      const write = this.next()
      const api = this.plan.apis[this.turn++ % this.plan.apis.length]
      const type = write.atomic ? ATOMIC : JSON_API
      const sent = Date.now()
      const response = await fetch(`${api}${write.path}`, {
        method: write.method,
        headers: write.body === undefined ? { accept: type } : { accept: type, 'content-type': type },
        body: write.body === undefined ? undefined : JSON.stringify(write.body),
      })
      const text = await response.text()
      const body = text ? JSON.parse(text) : undefined
      const status = response.status
      write.read?.(status, body)
      answered.push({
        what: write.what,
        status,
        sent,
        answered: Date.now(),
        effects: status < 300 ? write.effects : [],
        ...(status >= 500 ? { detail: text.slice(0, 300) } : {}),
      })
    }
  }
}

if (import.meta.main) {
  const plan = JSON.parse(Bun.argv[2] ?? '') as Plan
  const until = Date.now() + plan.ms
  const answered: Answered[] = []
  await Promise.all(
    Array.from({ length: plan.clients }, (_, c) => new Client(plan, plan.seed * 100 + c).run(until, answered)),
  )
  process.stdout.write(`${JSON.stringify(answered)}\n`)
}
