import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { changesNothing, expectUnprocessable, invalid } from '../support/expectations'
import { type Library, seedLibrary } from '../support/fixtures'
import { openTestApp, type TestApp } from '../support/harness'

// Names (docs/names.md): stored in Unicode NFC, one line without control characters, and blank
// unless a character shows on its own (combining marks alone do not).

const ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'
const NFC = 'Émile Zola'
const NFD = 'E\u0301mile Zola'

let t: TestApp
let lib: Library
beforeEach(async () => {
  t = await openTestApp()
  lib = await seedLibrary(t)
})
afterEach(() => t.close())

const types = ['authors', 'book_collections', 'books'] as const

/** A create document of `type` with this name (a book by the seeded author). */
function creation(type: string, name: unknown) {
  return { data: { type, attributes: { name, ...(type === 'books' ? { author_id: Number(lib.authorId) } : {}) } } }
}

function idOf(type: string): string {
  return { authors: lib.authorId, book_collections: lib.collectionId, books: lib.bookId }[type] as string
}

function operations(list: unknown[]) {
  return t.request('POST', '/api/v1/operations', {
    body: { 'atomic:operations': list },
    headers: { 'content-type': ATOMIC, accept: ATOMIC },
  })
}

describe.each(types)('the name of %s is stored in NFC', (type) => {
  it('on POST: a decomposed name is answered and stored composed', async () => {
    const answer = await t.post(`/api/v1/${type}`, creation(type, NFD))
    expect(answer.status).toBe(201)
    expect(answer.json.data.attributes.name).toBe(NFC)
    expect((await t.stored(type)).at(-1)?.name).toBe(NFC)
  })

  it.each(['PATCH', 'PUT'])('on %s', async (method) => {
    const id = idOf(type)
    const answer = await t.request(method, `/api/v1/${type}/${id}`, {
      body: { data: { type, id, attributes: { name: NFD } } },
    })
    expect(answer.status).toBe(200)
    expect((await t.stored(type)).find((r) => String(r.id) === id)?.name).toBe(NFC)
  })

  it('in atomic add and update operations', async () => {
    const answer = await operations([
      { op: 'add', data: creation(type, `${NFD} I`).data },
      { op: 'update', data: { type, id: idOf(type), attributes: { name: `${NFD} II` } } },
    ])
    expect(answer.status).toBe(200)
    const names = (await t.stored(type)).map((r) => r.name)
    expect(names).toContain(`${NFC} I`)
    expect(names).toContain(`${NFC} II`)
    expect(names.some((name) => String(name).includes('\u0301'))).toBe(false)
  })

  it('counting its length as stored: 1000 letters with separate accents fit', async () => {
    const answer = await t.post(`/api/v1/${type}`, creation(type, 'e\u0301'.repeat(1000)))
    expect(answer.status).toBe(201)
    expect((await t.stored(type)).at(-1)?.name).toBe('é'.repeat(1000))
  })
})

describe('GET /api/v1/authors?filter[name]=', () => {
  it('finds an author whatever form the name was sent or asked in: Émile in NFC and NFD is one name', async () => {
    const composed = await t.create('authors', { name: NFC })
    const decomposed = await t.create('authors', { name: NFD })
    for (const asked of [NFC, NFD]) {
      const answer = await t.get(`/api/v1/authors?filter[name]=${encodeURIComponent(asked)}`)
      expect(answer.status).toBe(200)
      expect(answer.json.data.map((a: { id: string }) => a.id)).toEqual([composed, decomposed])
    }
  })

  it('finds books and collections by a decomposed name too', async () => {
    await t.create('book_collections', { name: 'Les Rougon-Macquart, tome 1: La Fortune des Rougon — édition' })
    const asked = encodeURIComponent('Les Rougon-Macquart, tome 1: La Fortune des Rougon — e\u0301dition')
    expect((await t.get(`/api/v1/book_collections?filter[name]=${asked}`)).json.data).toHaveLength(1)
    await t.create('books', { name: 'Thérèse Raquin', author_id: lib.authorId })
    const book = encodeURIComponent('The\u0301re\u0300se Raquin')
    expect((await t.get(`/api/v1/books?filter[name]=${book}`)).json.data).toHaveLength(1)
  })
})

/** A name with `character` at code point `position` (1-based), and the 422 it gets. */
const breaking: [string, string, string][] = [
  ['NUL', 'Zo\u0000la', 'U+0000 at character 3'],
  ['ESC (a terminal escape)', '\u001b[31mZola', 'U+001B at character 1'],
  ['CR', 'Zola\r', 'U+000D at character 5'],
  ['LF', 'Émile\nZola', 'U+000A at character 6'],
  ['a tab', 'Émile\tZola', 'U+0009 at character 6'],
  ['DEL', 'Zola\u007f', 'U+007F at character 5'],
  ['a C1 control (NEL)', 'Zo\u0085la', 'U+0085 at character 3'],
  ['the C1 escape CSI', '\u009b2JZola', 'U+009B at character 1'],
  ['a line separator', 'Émile\u2028Zola', 'U+2028 at character 6'],
  ['an emoji before a NUL (characters, not UTF-16 units, are counted)', '😀\u0000', 'U+0000 at character 2'],
]

describe.each(types)('a name of %s with a control character or a line break', (type) => {
  const refusal = (where: string) =>
    invalid(`Name must not contain control characters or line breaks (${where})`, 'name')

  it.each(breaking)('POST: %s is a 422 naming it and where, and nothing is stored', async (_, name, where) => {
    const answer = await changesNothing(t, () => t.post(`/api/v1/${type}`, creation(type, name)))
    expectUnprocessable(answer, [refusal(where)])
  })

  it.each(breaking)('PATCH: %s is a 422, and nothing changes', async (_, name, where) => {
    const id = idOf(type)
    const answer = await changesNothing(t, () =>
      t.request('PATCH', `/api/v1/${type}/${id}`, { body: { data: { type, id, attributes: { name } } } }),
    )
    expectUnprocessable(answer, [refusal(where)])
  })

  it('in an atomic operation: a 422 under the operation, and nothing of the request is stored', async () => {
    const answer = await changesNothing(t, () =>
      operations([
        { op: 'add', data: creation(type, 'Kept?').data },
        { op: 'update', data: { type, id: idOf(type), attributes: { name: 'Two\nlines' } } },
      ]),
    )
    expect(answer.status).toBe(422)
    expect(answer.json.errors).toEqual([
      {
        title: 'Unprocessable Entity',
        detail: 'Name must not contain control characters or line breaks (U+000A at character 4)',
        source: { parameter: 'name', pointer: '/atomic:operations/1/data/attributes/name' },
      },
    ])
  })
})

describe('a name of combining marks alone', () => {
  it.each([
    ['an acute accent', '\u0301'],
    ['a diaeresis and an acute accent', '\u0308\u0301'],
    ['a Devanagari vowel sign and virama', '\u093f\u094d'],
    ['marks between spaces', ' \u0301 \u20dd '],
  ])("is blank: %s is a 422 Name can't be blank, and nothing is stored", async (_, name) => {
    for (const type of types) {
      const answer = await changesNothing(t, () => t.post(`/api/v1/${type}`, creation(type, name)))
      expectUnprocessable(answer, [invalid("Name can't be blank", 'name')])
    }
  })

  it('is a name once a letter carries them', async () => {
    const answer = await t.post('/api/v1/authors', creation('authors', 'x\u0301\u0308'))
    expect(answer.status).toBe(201)
    expect(answer.json.data.attributes.name).toBe('x\u0301\u0308')
  })
})
