import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { changesNothing, expectUnprocessable, invalid } from '../support/expectations'
import { seedLibrary } from '../support/fixtures'
import { openTestApp, type TestApp } from '../support/harness'

let app: TestApp
let authorId: string
let collectionId: string
let bookId: string

beforeEach(async () => {
  app = await openTestApp()
  ;({ authorId, collectionId, bookId } = await seedLibrary(app))
})

afterEach(async () => {
  await app.close()
})

const blank = invalid("Name can't be blank", 'name')
const notAString = invalid('Name must be a string', 'name')
const tooLong = invalid('Name is too long (maximum is 1000 characters)', 'name')
const authorMustExist = invalid('Author must exist', 'author')
const collectionMustExist = invalid('Book collection must exist', 'book_collection')

const types: [string, string][] = [
  ['authors', 'author'],
  ['book_collections', 'book_collection'],
  ['books', 'book'],
]

/** Attributes a create of `type` needs besides the name: a book needs its author. */
function required(type: string): Record<string, unknown> {
  return type === 'books' ? { author_id: Number(authorId) } : {}
}

function document(type: string, attributes: Record<string, unknown>, relationships?: Record<string, unknown>) {
  const data: Record<string, unknown> = { type, attributes }
  if (relationships) data.relationships = relationships
  return { data }
}

function idOf(type: string): string {
  return { authors: authorId, book_collections: collectionId, books: bookId }[type] as string
}

const blankNames: [string, string][] = [
  ['empty', ''],
  ['spaces', '   '],
  ['a tab and a newline', '\t\n'],
  ['a non-breaking space and CR LF', '\u00a0\r\n'],
  // Nothing visible is as blank as nothing at all.
  ['NUL', '\u0000'],
  ['control characters', '\u0001\u007f\u009f'],
  ['two zero-width spaces', '\u200b\u200b'],
  ['a byte order mark', '\ufeff'],
  ['a soft hyphen', '\u00ad'],
  ['the Hangul filler', '\u3164'],
  ['the blank Braille pattern', '\u2800'],
  ['a word joiner, a variation selector, a grapheme joiner and a tag', '\u2060\ufe0f\u034f\u{e0041}'],
  ['invisible characters among white space', ' \u200b\u00a0\u2060\t'],
  // Marks are drawn on a base character; without one nothing is written.
  ['combining marks alone', '\u0301\u0308'],
]

const nonStrings: [string, unknown][] = [
  ['a number', 5],
  ['an object', { first: 'Ursula' }],
  ['an array', ['Ursula']],
  ['null', null],
  ['a boolean', true],
]

describe.each(types)('POST /api/v1/%s', (type, singular) => {
  const create = (attributes: Record<string, unknown>) =>
    changesNothing(app, () => app.post(`/api/v1/${type}`, document(singular, { ...required(type), ...attributes })))

  it("rejects a missing name with 422 Name can't be blank and stores nothing", async () => {
    expectUnprocessable(await create({}), [blank])
  })

  it("rejects a document without attributes with 422 Name can't be blank", async () => {
    if (type === 'books') {
      const answer = await changesNothing(app, () =>
        app.post('/api/v1/books', {
          data: { type: 'book', relationships: { author: { data: { type: 'authors', id: authorId } } } },
        }),
      )
      expectUnprocessable(answer, [blank])
    } else {
      const answer = await changesNothing(app, () => app.post(`/api/v1/${type}`, { data: { type: singular } }))
      expectUnprocessable(answer, [blank])
    }
  })

  it.each(blankNames)("rejects a name of %s with 422 Name can't be blank and stores nothing", async (_, name) => {
    expectUnprocessable(await create({ name }), [blank])
  })

  it.each(nonStrings)('rejects a name that is %s with 422 Name must be a string', async (_, name) => {
    expectUnprocessable(await create({ name }), [notAString])
  })

  it('accepts a name of 1000 characters and stores it exactly', async () => {
    const name = 'n'.repeat(1000)
    const answer = await app.post(`/api/v1/${type}`, document(singular, { ...required(type), name }))
    expect(answer.status).toBe(201)
    expect(answer.json.data.attributes.name).toBe(name)
    expect((await app.stored(type)).at(-1)?.name).toBe(name)
  })

  it('rejects a name of 1001 characters with 422 Name is too long', async () => {
    expectUnprocessable(await create({ name: 'n'.repeat(1001) }), [tooLong])
  })

  it('counts characters, not UTF-16 units: 1000 emoji are accepted, 1001 are too long', async () => {
    const name = '📚'.repeat(1000)
    expect(name.length).toBe(2000)
    const answer = await app.post(`/api/v1/${type}`, document(singular, { ...required(type), name }))
    expect(answer.status).toBe(201)
    expect((await app.stored(type)).at(-1)?.name).toBe(name)
    expectUnprocessable(await create({ name: '📚'.repeat(1001) }), [tooLong])
  })

  it('rejects an unknown attribute with 422 Foo is not a known attribute', async () => {
    expectUnprocessable(await create({ name: 'Fine', foo: 'bar' }), [invalid('Foo is not a known attribute', 'foo')])
  })

  it('words an unknown attribute with underscores as Rails does', async () => {
    expectUnprocessable(await create({ name: 'Fine', first_name: 'Ursula' }), [
      invalid('First name is not a known attribute', 'first_name'),
    ])
  })

  it.each([
    ['constructor', 'Constructor is not a known attribute'],
    ['toString', 'ToString is not a known attribute'],
  ])('rejects an attribute named %s, which every object inherits, as unknown', async (name, detail) => {
    expectUnprocessable(await create({ name: 'Fine', [name]: 'x' }), [invalid(detail, name)])
  })

  it('reports every failure at once: attribute errors in field order, then unknown attributes', async () => {
    expectUnprocessable(await create({ zeta: 1, name: '', alpha: 2 }), [
      blank,
      invalid('Zeta is not a known attribute', 'zeta'),
      invalid('Alpha is not a known attribute', 'alpha'),
    ])
  })

  it('gives each 422 error object exactly title, detail and source (parameter, pointer)', async () => {
    const answer = await create({ name: '' })
    expect(answer.status).toBe(422)
    const [error] = answer.json.errors
    expect(Object.keys(error).sort()).toEqual(['detail', 'source', 'title'])
    expect(Object.keys(error.source).sort()).toEqual(['parameter', 'pointer'])
  })
})

describe.each(types)('PUT and PATCH /api/v1/%s/:id', (type, singular) => {
  const methods = ['PUT', 'PATCH']
  const update = (method: string, attributes: Record<string, unknown> | undefined) =>
    app.request(method, `/api/v1/${type}/${idOf(type)}`, {
      body: { data: attributes === undefined ? { type: singular } : { type: singular, attributes } },
    })

  it.each(methods.flatMap((m) => blankNames.map(([label, name]) => [m, label, name])))(
    "%s rejects a name of %s with 422 Name can't be blank and changes nothing",
    async (method, _, name) => {
      expectUnprocessable(await changesNothing(app, () => update(method as string, { name })), [blank])
    },
  )

  it.each(methods.flatMap((m) => nonStrings.map(([label, name]) => [m, label, name])))(
    '%s rejects a name that is %s with 422 Name must be a string and changes nothing',
    async (method, _, name) => {
      expectUnprocessable(await changesNothing(app, () => update(method as string, { name })), [notAString])
    },
  )

  it.each(methods)('%s rejects a name of 1001 characters with 422 and changes nothing', async (method) => {
    expectUnprocessable(await changesNothing(app, () => update(method, { name: 'n'.repeat(1001) })), [tooLong])
  })

  it.each(methods)('%s rejects an unknown attribute with 422 and changes nothing', async (method) => {
    expectUnprocessable(await changesNothing(app, () => update(method, { name: 'Changed', foo: 1 })), [
      invalid('Foo is not a known attribute', 'foo'),
    ])
  })

  it.each(methods)('%s without a name leaves the name unchanged (200)', async (method) => {
    const before = await app.stored(type)
    const answer = await update(method, {})
    expect(answer.status).toBe(200)
    expect(answer.json.data.id).toBe(idOf(type))
    expect(await app.stored(type)).toEqual(before)
  })

  it.each(methods)('%s without an attributes member leaves the record unchanged (200)', async (method) => {
    const before = await app.stored(type)
    const answer = await update(method, undefined)
    expect(answer.status).toBe(200)
    expect(await app.stored(type)).toEqual(before)
  })

  it.each(methods)('%s with a valid name of 1000 characters stores it (200)', async (method) => {
    const name = 'm'.repeat(1000)
    const answer = await update(method, { name })
    expect(answer.status).toBe(200)
    expect(answer.json.data.attributes.name).toBe(name)
    expect((await app.stored(type)).find((row) => String(row.id) === idOf(type))?.name).toBe(name)
  })
})

describe('POST /api/v1/books: the author', () => {
  const create = (attributes: Record<string, unknown>, relationships?: Record<string, unknown>) =>
    changesNothing(app, () => app.post('/api/v1/books', document('book', attributes, relationships)))

  it("answers the exact interface.md case: blank name and no author give [Author must exist, Name can't be blank]", async () => {
    const answer = await create({ name: '' })
    expect(answer.status).toBe(422)
    expect(answer.json).toEqual({
      errors: [
        {
          title: 'Unprocessable Entity',
          detail: 'Author must exist',
          source: { parameter: 'author', pointer: 'data/attributes/author' },
        },
        {
          title: 'Unprocessable Entity',
          detail: "Name can't be blank",
          source: { parameter: 'name', pointer: 'data/attributes/name' },
        },
      ],
    })
    expect(await app.stored('books')).toHaveLength(1)
  })

  it.each([
    ['missing', undefined],
    ['an unknown id', 999],
    ['an unknown id as a string', '999'],
    ['a word', 'abc'],
    ['null', null],
    ['a fraction', 1.5],
    ['zero', 0],
    ['negative', -1],
    ['a numeric string with a leading zero', '01'],
    ['an object', { id: 1 }],
  ])('rejects author_id %s with 422 Author must exist and stores nothing', async (_, authorIdValue) => {
    const attributes: Record<string, unknown> = { name: 'The Dispossessed' }
    if (authorIdValue !== undefined) attributes.author_id = authorIdValue
    expectUnprocessable(await create(attributes), [authorMustExist])
  })

  it('accepts author_id as a numeric string', async () => {
    const answer = await app.post('/api/v1/books', document('book', { name: 'The Dispossessed', author_id: authorId }))
    expect(answer.status).toBe(201)
    expect((await app.stored('books')).at(-1)).toMatchObject({ name: 'The Dispossessed', author_id: Number(authorId) })
  })

  it('rejects relationships.author.data null with 422 Author must exist', async () => {
    expectUnprocessable(await create({ name: 'The Dispossessed' }, { author: { data: null } }), [authorMustExist])
  })

  it.each([
    ['an unknown id', '999'],
    ['a word', 'abc'],
  ])('rejects relationships.author naming %s with 422 Author must exist', async (_, id) => {
    expectUnprocessable(await create({ name: 'The Dispossessed' }, { author: { data: { type: 'authors', id } } }), [
      authorMustExist,
    ])
  })

  it('accepts the author given as relationship linkage', async () => {
    const answer = await app.post(
      '/api/v1/books',
      document('book', { name: 'The Dispossessed' }, { author: { data: { type: 'authors', id: authorId } } }),
    )
    expect(answer.status).toBe(201)
  })
})

describe('POST /api/v1/books: the book collection', () => {
  const create = (attributes: Record<string, unknown>, relationships?: Record<string, unknown>) =>
    changesNothing(app, () =>
      app.post('/api/v1/books', document('book', { author_id: Number(authorId), ...attributes }, relationships)),
    )

  it.each([
    ['an unknown id', 999],
    ['a word', 'abc'],
    ['a fraction', 1.5],
  ])('rejects book_collection_id %s with 422 Book collection must exist and stores nothing', async (_, value) => {
    expectUnprocessable(await create({ name: 'Rocannon', book_collection_id: value }), [collectionMustExist])
  })

  it('rejects relationships.book_collection naming an unknown collection with 422', async () => {
    const answer = await create(
      { name: 'Rocannon' },
      { book_collection: { data: { type: 'book_collections', id: '999' } } },
    )
    expectUnprocessable(answer, [collectionMustExist])
  })

  it('accepts book_collection_id null: the book has no collection', async () => {
    const answer = await app.post(
      '/api/v1/books',
      document('book', { name: 'Rocannon', author_id: Number(authorId), book_collection_id: null }),
    )
    expect(answer.status).toBe(201)
    expect((await app.stored('books')).at(-1)).toMatchObject({ name: 'Rocannon', book_collection_id: null })
  })

  it('accepts book_collection_id as a numeric string', async () => {
    const answer = await app.post(
      '/api/v1/books',
      document('book', { name: 'Rocannon', author_id: Number(authorId), book_collection_id: collectionId }),
    )
    expect(answer.status).toBe(201)
    expect((await app.stored('books')).at(-1)).toMatchObject({ book_collection_id: Number(collectionId) })
  })
})

describe('POST /api/v1/books: several failures at once', () => {
  it('orders them author, book collection, attributes in field order, unknown attributes', async () => {
    const answer = await changesNothing(app, () =>
      app.post('/api/v1/books', document('book', { extra: true, name: 5, book_collection_id: 999, author_id: 999 })),
    )
    expectUnprocessable(answer, [
      authorMustExist,
      collectionMustExist,
      notAString,
      invalid('Extra is not a known attribute', 'extra'),
    ])
  })

  it('orders them the same when the relationships are given as linkage', async () => {
    const answer = await changesNothing(app, () =>
      app.post(
        '/api/v1/books',
        document(
          'book',
          { name: ' ', isbn: '0-441-47812-3' },
          {
            book_collection: { data: { type: 'book_collections', id: '999' } },
            author: { data: { type: 'authors', id: '999' } },
          },
        ),
      ),
    )
    expectUnprocessable(answer, [
      authorMustExist,
      collectionMustExist,
      blank,
      invalid('Isbn is not a known attribute', 'isbn'),
    ])
  })

  it('reports a missing author beside a valid collection and a too long name', async () => {
    const answer = await changesNothing(app, () =>
      app.post('/api/v1/books', document('book', { name: 'n'.repeat(1001), book_collection_id: Number(collectionId) })),
    )
    expectUnprocessable(answer, [authorMustExist, tooLong])
  })
})

describe('PUT and PATCH /api/v1/books/:id', () => {
  const methods = [['PUT'], ['PATCH']]
  const update = (method: string, attributes: Record<string, unknown>, relationships?: Record<string, unknown>) =>
    app.request(method, `/api/v1/books/${bookId}`, { body: document('book', attributes, relationships) })

  it.each(methods)('%s with only a valid name succeeds without author_id and keeps the author', async (method) => {
    const answer = await update(method, { name: 'The Dispossessed' })
    expect(answer.status).toBe(200)
    expect(answer.json.data.attributes).toEqual({ name: 'The Dispossessed' })
    expect(await app.stored('books')).toEqual([
      {
        id: Number(bookId),
        name: 'The Dispossessed',
        author_id: Number(authorId),
        book_collection_id: Number(collectionId),
      },
    ])
  })

  it.each(methods)('%s with relationships.author.data null answers 422 Author must exist', async (method) => {
    const answer = await changesNothing(app, () => update(method, { name: 'X' }, { author: { data: null } }))
    expectUnprocessable(answer, [authorMustExist])
  })

  it.each([
    ['PUT', 'null', null],
    ['PATCH', 'an unknown id', 999],
    ['PUT', 'a word', 'abc'],
    ['PATCH', 'a fraction', 1.5],
  ])('%s with author_id %s answers 422 Author must exist and changes nothing', async (method, _, value) => {
    const answer = await changesNothing(app, () => update(method, { author_id: value }))
    expectUnprocessable(answer, [authorMustExist])
  })

  it.each(methods)('%s with book_collection_id unknown answers 422 Book collection must exist', async (method) => {
    const answer = await changesNothing(app, () => update(method, { book_collection_id: 999 }))
    expectUnprocessable(answer, [collectionMustExist])
  })

  it.each(methods)('%s with a blank name and an unknown author reports both, author first', async (method) => {
    const answer = await changesNothing(app, () => update(method, { name: '', author_id: 999 }))
    expectUnprocessable(answer, [authorMustExist, blank])
  })

  it.each(methods)('%s with relationships.book_collection.data null clears the collection (200)', async (method) => {
    const answer = await update(method, {}, { book_collection: { data: null } })
    expect(answer.status).toBe(200)
    expect(await app.stored('books')).toEqual([
      { id: Number(bookId), name: 'The Left Hand of Darkness', author_id: Number(authorId), book_collection_id: null },
    ])
  })

  it.each(methods)('%s with book_collection_id null clears the collection (200)', async (method) => {
    const answer = await update(method, { book_collection_id: null })
    expect(answer.status).toBe(200)
    expect((await app.stored('books'))[0]).toMatchObject({ book_collection_id: null, author_id: Number(authorId) })
  })

  it.each(methods)('%s with author_id as a numeric string moves the book to that author', async (method) => {
    const other = await app.create('authors', { name: 'Octavia E. Butler' })
    const answer = await update(method, { author_id: other })
    expect(answer.status).toBe(200)
    expect((await app.stored('books'))[0]).toMatchObject({
      author_id: Number(other),
      name: 'The Left Hand of Darkness',
    })
  })
})

describe('names hold a visible character', () => {
  const atomic = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'
  const operations = (list: unknown[]) =>
    app.request('POST', '/api/v1/operations', {
      body: { 'atomic:operations': list },
      headers: { 'content-type': atomic, accept: atomic },
    })

  it.each([
    ['zero-width spaces around it', '\u200bZoë\u200b'],
    ['a soft hyphen inside it', 'Ur\u00adsula'],
    ['a combining mark on a letter that has no composed form', 'Mx\u0301x'],
  ])('accepts a name with %s and stores it exactly as sent', async (_, name) => {
    const answer = await app.post('/api/v1/authors', document('author', { name }))
    expect(answer.status).toBe(201)
    expect(answer.json.data.attributes.name).toBe(name)
    expect((await app.stored('authors')).at(-1)?.name).toBe(name)
  })

  it("rejects an invisible name in an atomic add with 422 Name can't be blank under the operation, storing nothing", async () => {
    const answer = await changesNothing(app, () =>
      operations([
        { op: 'add', data: { type: 'authors', attributes: { name: 'Kept?' } } },
        { op: 'add', data: { type: 'authors', attributes: { name: '\u200b\u2060' } } },
      ]),
    )
    expect(answer.status).toBe(422)
    expect(answer.json.errors).toEqual([
      {
        title: 'Unprocessable Entity',
        detail: "Name can't be blank",
        source: { parameter: 'name', pointer: '/atomic:operations/1/data/attributes/name' },
      },
    ])
  })

  it("rejects an invisible name in an atomic update with 422 Name can't be blank, changing nothing", async () => {
    const answer = await changesNothing(app, () =>
      operations([{ op: 'update', data: { type: 'books', id: bookId, attributes: { name: '\u3164' } } }]),
    )
    expect(answer.status).toBe(422)
    expect(answer.json.errors[0]).toEqual({
      title: 'Unprocessable Entity',
      detail: "Name can't be blank",
      source: { parameter: 'name', pointer: '/atomic:operations/0/data/attributes/name' },
    })
  })
})
