import {
  type Answer,
  addBook,
  change,
  type ExpectedChange,
  type FeedType,
  linkage,
  MISSING,
  named,
  seeded,
  sendWrite,
  type Write,
} from './feed-ledger'

/*
 * Writers for the change feed's concurrency tests (test/commands/change-feed.test.ts and
 * postgres-change-feed.test.ts): loops that each send one write at a time to the service, over
 * HTTP, into a ledger (feed-ledger.ts). A writer owns every record it creates and is the only one
 * to change it, so the order of a record's changes is the order of its writer's acknowledgements.
 * Shared authors (created first, never changed) are the targets books move to between writers.
 * Every write is one the feed describes exactly (FEED-SPEC.md, "What a change is"); none is a
 * no-op, whose change the spec leaves open.
 */

interface Book {
  author: string
  collection: string | null
}

export class Writer {
  private readonly random: () => number
  private readonly authors = new Set<string>()
  private readonly collections = new Map<string, Set<string>>()
  private readonly books = new Map<string, Book>()
  private step = 0

  /**
   * `apis`: the service's `.../api/v1` addresses, taken in turn write after write; `shared`: the
   * authors every writer may move its books to; `ledger`: where every write is recorded.
   */
  constructor(
    readonly number: number,
    private readonly apis: readonly string[],
    private readonly shared: readonly string[],
    private readonly ledger: Write[],
  ) {
    this.random = seeded(number * 7919 + 17)
  }

  private pick<T>(items: Iterable<T>): T | undefined {
    const list = [...items]
    return list[Math.floor(this.random() * list.length)]
  }

  private name(what: string): string {
    return `W${this.number} ${what} ${this.step}`
  }

  /** Sends one write to the next address and records it in the ledger (see sendWrite). */
  private send(
    what: string,
    method: string,
    path: string,
    body: unknown,
    changes: (answer: Answer) => ExpectedChange[],
    options: { refused?: boolean; atomic?: boolean } = {},
  ): Promise<Answer> {
    const instance = (this.number + this.step) % this.apis.length
    const request = { writer: this.number, what, instance, method, path, body, changes, ...options }
    return sendWrite(this.ledger, this.apis[instance] as string, request)
  }

  /** POST of a new record, named after this write: its id. */
  private async create(type: FeedType, attributes: Record<string, unknown> = {}): Promise<string> {
    const what = `create ${type.replace(/s$/, '').replace('_', ' ')}`
    const body = { data: { type, attributes: { name: this.name(type), ...attributes } } }
    const answer = await this.send(what, 'POST', `/${type}`, body, (a) => [change(type, String(a.data?.id), 'create')])
    return String(answer.data?.id)
  }

  /** Creates an author of this writer's own, or (for the seed) one to share. */
  async createAuthor(): Promise<string> {
    const author = await this.create('authors')
    this.authors.add(author)
    return author
  }

  private booksOf(author: string): string[] {
    return [...this.books.keys()].filter((id) => this.books.get(id)?.author === author)
  }

  private anotherAuthor(than: readonly string[]): string | undefined {
    return this.pick([...this.authors, ...this.shared].filter((a) => !than.includes(a)))
  }

  /** The writes a writer chooses from, each returning false when it does not apply yet. */
  private readonly writes: (() => Promise<boolean>)[] = [
    async () => Boolean(await this.createAuthor()),
    async () => Boolean(this.collections.set(await this.create('book_collections'), new Set())),
    () => this.createBook(),
    () => this.renameBook(),
    () => this.renameBook(),
    () => this.moveByAttributes(),
    () => this.moveByRelationship(),
    () => this.moveToAuthor(),
    () => this.changeMembers(),
    () => this.changeMembers(),
    () => this.renameAuthor(),
    () => this.deleteBook(),
    () => this.deleteCollection(),
    () => this.deleteAuthor(),
    () => this.batch(),
    () => this.refused(),
  ]

  private async createBook(): Promise<boolean> {
    const author = this.anotherAuthor([]) as string
    const collection = this.random() < 0.5 ? (this.pick(this.collections.keys()) ?? null) : null
    const book = await this.create('books', { author_id: author, book_collection_id: collection })
    this.books.set(book, { author, collection })
    if (collection !== null) this.collections.get(collection)?.add(book)
    return true
  }

  /** Sends `count` writes, chosen at random among those that apply. */
  async run(count: number): Promise<void> {
    for (let done = 0; done < count; ) {
      this.step++
      const write = this.pick(this.writes) as () => Promise<boolean>
      if (await write()) done++
    }
  }

  private async renameBook(): Promise<boolean> {
    const book = this.pick(this.books.keys())
    if (book === undefined) return false
    const body = { data: named('books', book, this.name('renamed')) }
    await this.send('rename book', 'PATCH', `/books/${book}`, body, () => [change('books', book, 'update')])
    return true
  }

  private async moveByAttributes(): Promise<boolean> {
    const book = this.pick(this.books.keys())
    if (book === undefined) return false
    const state = this.books.get(book) as Book
    const author = this.anotherAuthor([state.author]) as string
    const collection = this.pick([...this.collections.keys()].filter((c) => c !== state.collection)) ?? null
    const attributes = { author_id: author, book_collection_id: collection }
    await this.send(
      'move book by its attributes',
      'PATCH',
      `/books/${book}`,
      { data: { type: 'books', id: book, attributes } },
      () => [change('books', book, 'update')],
    )
    this.moveInto(book, collection)
    state.author = author
    return true
  }

  private moveInto(book: string, collection: string | null): void {
    const state = this.books.get(book) as Book
    if (state.collection !== null) this.collections.get(state.collection)?.delete(book)
    if (collection !== null) this.collections.get(collection)?.add(book)
    state.collection = collection
  }

  private async moveByRelationship(): Promise<boolean> {
    const book = this.pick(this.books.keys())
    if (book === undefined) return false
    const state = this.books.get(book) as Book
    const author = this.anotherAuthor([state.author]) as string
    await this.send(
      'move book by its author relationship',
      'PATCH',
      `/books/${book}/relationships/author`,
      { data: { type: 'authors', id: author } },
      () => [change('books', book, 'update')],
    )
    state.author = author
    return true
  }

  /** POST /authors/{id}/relationships/books with two books of other authors. */
  private async moveToAuthor(): Promise<boolean> {
    const first = this.pick(this.books.keys())
    const second = this.pick([...this.books.keys()].filter((b) => b !== first))
    if (first === undefined || second === undefined) return false
    const moved = [first, second]
    const author = this.anotherAuthor(moved.map((b) => (this.books.get(b) as Book).author))
    if (author === undefined) return false
    await this.send('move books to an author', 'POST', `/authors/${author}/relationships/books`, linkage(moved), () =>
      moved.map((b) => change('books', b, 'update')),
    )
    for (const b of moved) (this.books.get(b) as Book).author = author
    return true
  }

  /** POST, DELETE or PATCH of a collection's books: an update of each book that moves in or out. */
  private async changeMembers(): Promise<boolean> {
    const collection = this.pick(this.collections.keys())
    const book = this.pick(this.books.keys())
    if (collection === undefined || book === undefined) return false
    const members = this.collections.get(collection) as Set<string>
    const path = `/book_collections/${collection}/relationships/books`
    const updates = (ids: Iterable<string>) => () => [...ids].map((b) => change('books', b, 'update'))
    const roll = this.random()
    if (roll < 0.4 && !members.has(book)) {
      await this.send('add a book to a collection', 'POST', path, linkage([book]), updates([book]))
      this.moveInto(book, collection)
    } else if (roll < 0.7 && members.has(book)) {
      await this.send('remove a book from a collection', 'DELETE', path, linkage([book]), updates([book]))
      this.moveInto(book, null)
    } else {
      // Its books replaced by one that was not among them (one that was would be left unchanged).
      if (members.has(book)) return false
      const leaving = [...members]
      await this.send("replace a collection's books", 'PATCH', path, linkage([book]), updates([...leaving, book]))
      for (const b of leaving) this.moveInto(b, null)
      this.moveInto(book, collection)
    }
    return true
  }

  private async renameAuthor(): Promise<boolean> {
    const author = this.pick(this.authors)
    if (author === undefined) return false
    const body = { data: named('authors', author, this.name('renamed author')) }
    await this.send('rename author', 'PATCH', `/authors/${author}`, body, () => [change('authors', author, 'update')])
    return true
  }

  private async deleteBook(): Promise<boolean> {
    const book = this.pick(this.books.keys())
    if (book === undefined || this.books.size < 4) return false
    await this.send('delete book', 'DELETE', `/books/${book}`, undefined, () => [change('books', book, 'delete')])
    this.moveInto(book, null)
    this.books.delete(book)
    return true
  }

  /** Deleting a collection: its delete and an update of each book that was in it. */
  private async deleteCollection(): Promise<boolean> {
    const collection = this.pick(this.collections.keys())
    if (collection === undefined || this.collections.size < 2) return false
    const members = [...(this.collections.get(collection) as Set<string>)]
    await this.send('delete collection', 'DELETE', `/book_collections/${collection}`, undefined, () => [
      change('book_collections', collection, 'delete'),
      ...members.map((b) => change('books', b, 'update')),
    ])
    for (const b of members) this.moveInto(b, null)
    this.collections.delete(collection)
    return true
  }

  /** An author without books is deleted; one with books is refused (409) and changes nothing. */
  private async deleteAuthor(): Promise<boolean> {
    const author = this.pick(this.authors)
    if (author === undefined || this.authors.size < 2) return false
    const refused = this.booksOf(author).length > 0
    await this.send(
      refused ? 'delete an author who has books (refused)' : 'delete author',
      'DELETE',
      `/authors/${author}`,
      undefined,
      () => [change('authors', author, 'delete')],
      { refused },
    )
    if (!refused) this.authors.delete(author)
    return true
  }

  /** An atomic batch: an author, a book of it (by lid), and a rename of another book. */
  private async batch(): Promise<boolean> {
    const renamed = this.pick(this.books.keys())
    if (renamed === undefined) return false
    const operations = [
      { op: 'add', data: { type: 'authors', lid: 'a', attributes: { name: this.name('batch author') } } },
      addBook(this.name('batch book'), { lid: 'a' }),
      { op: 'update', data: named('books', renamed, this.name('batch rename')) },
    ]
    const answer = await this.send(
      'atomic batch',
      'POST',
      '/operations',
      { 'atomic:operations': operations },
      (a) => {
        const [author, book] = (a['atomic:results'] ?? []).map((r) => String(r.data?.id)) as [string, string]
        return [
          change('authors', author, 'create'),
          change('books', book, 'create'),
          change('books', renamed, 'update'),
        ]
      },
      { atomic: true },
    )
    const [author, book] = (answer['atomic:results'] ?? []).map((r) => String(r.data?.id)) as [string, string]
    this.authors.add(author)
    this.books.set(book, { author, collection: null })
    return true
  }

  /** A write the service refuses (4xx): a book moved to no author, or a batch whose last operation fails. */
  private async refused(): Promise<boolean> {
    const book = this.pick(this.books.keys())
    if (book === undefined) return false
    if (this.random() < 0.5) {
      const body = { data: { ...named('books', book, this.name('never')), attributes: { author_id: MISSING } } }
      const what = 'move a book to a missing author (refused)'
      await this.send(what, 'PATCH', `/books/${book}`, body, () => [], { refused: true })
    } else {
      const operations = [
        { op: 'update', data: named('books', book, this.name('never')) },
        { op: 'add', data: { type: 'authors', attributes: { name: this.name('never author') } } },
        addBook(this.name('never book'), { id: MISSING }),
      ]
      const what = 'a batch whose last operation fails (refused)'
      const body = { 'atomic:operations': operations }
      await this.send(what, 'POST', '/operations', body, () => [], { refused: true, atomic: true })
    }
    return true
  }
}
