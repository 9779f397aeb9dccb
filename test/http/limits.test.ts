import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { changesNothing, expectErrorResponse, expectOneError, invalid } from '../support/expectations'
import { type Library, seedLibrary } from '../support/fixtures'
import { type Answer, openTestApp, type TestApp } from '../support/harness'

// Every limit of src/jsonapi/limits.ts: what a request just over it gets, and that one just at it
// is served. Each request over a limit costs the service no more than reading it.

const ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'

let t: TestApp
let library: Library
beforeEach(async () => {
  t = await openTestApp()
  library = await seedLibrary(t)
})
afterEach(() => t.close())

/** A 400 with exactly one error: this detail and this source. */
function expectBadRequest(answer: Answer, detail: string, source: Record<string, string>): void {
  expectErrorResponse(answer, 400)
  expect(answer.json.errors).toEqual([{ status: '400', title: 'Bad Request', detail, source }])
}

/** `1,2,...,n`. */
function idList(n: number): string {
  return Array.from({ length: n }, (_, i) => i + 1).join(',')
}

/** `[{type, id: "1"}, ..., {type, id: "n"}]`, the ids counted from `from`. */
function identifiers(type: string, n: number, from = 1): { type: string; id: string }[] {
  return Array.from({ length: n }, (_, i) => ({ type, id: String(from + i) }))
}

function operations(list: unknown[], app: TestApp = t): Promise<Answer> {
  return app.request('POST', '/api/v1/operations', {
    body: { 'atomic:operations': list },
    headers: { 'content-type': ATOMIC, accept: ATOMIC },
  })
}

/** Reopens the app with some limits set lower, over the same seed data. */
async function withLimits(limits: Parameters<typeof openTestApp>[0]): Promise<void> {
  await t.close()
  t = await openTestApp(limits)
  library = await seedLibrary(t)
}

describe('filter[search]: at most MAX_SEARCH_WORDS words (10 by default)', () => {
  // The words of "The Left Hand of Darkness", its author and its collection: 10 in all.
  const tenWords = 'The Left Hand of Darkness Ursula K Le Guin Hainish'

  it('answers a search of exactly 10 words', async () => {
    const answer = await t.get(`/api/v1/books?filter[search]=${encodeURIComponent(tenWords)}`)
    expect(answer.status).toBe(200)
    expect(answer.json.data.map((b: { id: string }) => b.id)).toEqual([library.bookId])
  })

  it('rejects 11 words with 400 naming the limit and the count', async () => {
    const answer = await t.get(`/api/v1/books?filter[search]=${encodeURIComponent(`${tenWords} Cycle`)}`)
    expectBadRequest(answer, 'filter[search] takes at most 10 words (got 11)', { parameter: 'filter[search]' })
  })

  it('rejects 2,000 words just as cheaply', async () => {
    const answer = await t.get(`/api/v1/books?filter[search]=${'a+'.repeat(1999)}a`)
    expectBadRequest(answer, 'filter[search] takes at most 10 words (got 2000)', { parameter: 'filter[search]' })
  })

  it('counts words as the search reads them: runs of letters and digits, punctuation between them', async () => {
    // 10 words once "l'été" is two (l, été) and the hyphen and commas separate.
    const ten = "l'été,1984;Rougon-Macquart Zola (ＡＢＣ) x y z"
    expect((await t.get(`/api/v1/books?filter[search]=${encodeURIComponent(ten)}`)).status).toBe(200)
    const answer = await t.get(`/api/v1/books?filter[search]=${encodeURIComponent(`${ten}!w`)}`)
    expectBadRequest(answer, 'filter[search] takes at most 10 words (got 11)', { parameter: 'filter[search]' })
  })

  it('applies to every type and to related lists', async () => {
    const eleven = 'a b c d e f g h i j k'.replaceAll(' ', '+')
    for (const path of ['/api/v1/authors', '/api/v1/book_collections', `/api/v1/authors/${library.authorId}/books`]) {
      const answer = await t.get(`${path}?filter[search]=${eleven}`)
      expectBadRequest(answer, 'filter[search] takes at most 10 words (got 11)', { parameter: 'filter[search]' })
    }
  })

  it('takes its limit from the maxSearchWords setting', async () => {
    await withLimits({ limits: { maxSearchWords: 2 } })
    expect((await t.get('/api/v1/books?filter[search]=left+hand')).status).toBe(200)
    const answer = await t.get('/api/v1/books?filter[search]=left+hand+darkness')
    expectBadRequest(answer, 'filter[search] takes at most 2 words (got 3)', { parameter: 'filter[search]' })
  })
})

describe('include: at most MAX_INCLUDE_DEPTH relationships deep (3) and MAX_INCLUDE_PATHS paths (10)', () => {
  const author = () => `/api/v1/authors/${library.authorId}`

  it('answers a path exactly 3 relationships deep', async () => {
    // The collection's books, their author, and the author's other book, reached only at depth 3.
    const other = await t.create('books', { name: 'The Dispossessed', author_id: Number(library.authorId) })
    const answer = await t.get(`/api/v1/book_collections/${library.collectionId}?include=books.author.books`)
    expect(answer.status).toBe(200)
    expect(answer.json.included.map((r: { type: string; id: string }) => `${r.type} ${r.id}`)).toEqual([
      `books ${library.bookId}`,
      `authors ${library.authorId}`,
      `books ${other}`,
    ])
  })

  it('rejects a path 4 deep with 400 naming the path and its depth', async () => {
    const answer = await t.get(`${author()}?include=books.author.books.author`)
    expectBadRequest(answer, 'include paths go at most 3 relationships deep ("books.author.books.author" goes 4)', {
      parameter: 'include',
    })
  })

  it('measures a 1,000-level path before reading any of its names', async () => {
    const path = `${'nothing.'.repeat(999)}nothing`
    const answer = await t.get(`${author()}?include=${path}`)
    expectBadRequest(answer, `include paths go at most 3 relationships deep ("${path}" goes 1000)`, {
      parameter: 'include',
    })
  })

  it('checks every path for depth before any path for names', async () => {
    const answer = await t.get(`${author()}?include=unknown,books.author.books.author`)
    expect(answer.json.errors[0].detail).toContain('at most 3 relationships deep')
  })

  it('answers 10 paths, a repeated path counting each time it is written', async () => {
    const answer = await t.get(`${author()}?include=${Array(10).fill('books').join(',')}`)
    expect(answer.status).toBe(200)
    expect(answer.json.included).toHaveLength(1)
  })

  it('rejects 11 paths with 400 naming the limit and the count', async () => {
    const answer = await t.get(`${author()}?include=${Array(11).fill('books').join(',')}`)
    expectBadRequest(answer, 'include takes at most 10 paths (got 11)', { parameter: 'include' })
  })

  it('applies to lists and related endpoints as well', async () => {
    for (const path of ['/api/v1/books', `/api/v1/books/${library.bookId}/author`]) {
      const answer = await t.get(`${path}?include=author.books.author.books`)
      expectBadRequest(answer, 'include paths go at most 3 relationships deep ("author.books.author.books" goes 4)', {
        parameter: 'include',
      })
    }
  })

  it('takes its limits from the maxIncludeDepth and maxIncludePaths settings', async () => {
    await withLimits({ limits: { maxIncludeDepth: 1, maxIncludePaths: 2 } })
    expect((await t.get(`${author()}?include=books,books`)).status).toBe(200)
    expectBadRequest(
      await t.get(`${author()}?include=books.author`),
      'include paths go at most 1 relationships deep ("books.author" goes 2)',
      {
        parameter: 'include',
      },
    )
    expectBadRequest(await t.get(`${author()}?include=books,books,books`), 'include takes at most 2 paths (got 3)', {
      parameter: 'include',
    })
  })
})

describe('filter[author], filter[book_collection] and ?author_id=: at most MAX_FILTER_IDS ids (100)', () => {
  it('answers exactly 100 ids', async () => {
    const answer = await t.get(`/api/v1/books?filter[author]=${idList(100)}`)
    expect(answer.status).toBe(200)
    expect(answer.json.data).toHaveLength(1)
  })

  it('rejects 101 ids with 400 naming the parameter, the limit and the count', async () => {
    const answer = await t.get(`/api/v1/books?filter[author]=${idList(101)}`)
    expectBadRequest(answer, 'filter[author] takes at most 100 ids (got 101)', { parameter: 'filter[author]' })
  })

  it('counts repeated ids each time they are written', async () => {
    const answer = await t.get(`/api/v1/books?filter[author]=${Array(101).fill('1').join(',')}`)
    expectBadRequest(answer, 'filter[author] takes at most 100 ids (got 101)', { parameter: 'filter[author]' })
  })

  it('does not count null among the ids of filter[book_collection]', async () => {
    expect((await t.get(`/api/v1/books?filter[book_collection]=null,${idList(100)}`)).status).toBe(200)
    const answer = await t.get(`/api/v1/books?filter[book_collection]=${idList(101)},null`)
    expectBadRequest(answer, 'filter[book_collection] takes at most 100 ids (got 101)', {
      parameter: 'filter[book_collection]',
    })
  })

  it('applies to the plain ?author_id= too', async () => {
    expect((await t.get(`/api/v1/books?author_id=${idList(100)}`)).status).toBe(200)
    const answer = await t.get(`/api/v1/books?author_id=${idList(101)}`)
    expectBadRequest(answer, 'author_id takes at most 100 ids (got 101)', { parameter: 'author_id' })
  })

  it('takes its limit from the maxFilterIds setting', async () => {
    await withLimits({ limits: { maxFilterIds: 2 } })
    expect((await t.get('/api/v1/books?filter[author]=1,2')).status).toBe(200)
    expectBadRequest(await t.get('/api/v1/books?filter[author]=1,2,3'), 'filter[author] takes at most 2 ids (got 3)', {
      parameter: 'filter[author]',
    })
  })
})

describe('to-many relationship writes: at most MAX_RELATIONSHIP_IDS identifiers (1000)', () => {
  const collectionBooks = () => `/api/v1/book_collections/${library.collectionId}/relationships/books`
  const overLimit = 'A relationship write takes at most 1000 resource identifiers (got 1001)'

  it.each(['POST', 'PATCH', 'DELETE'])(
    '%s with 1001 identifiers is a 400 pointing at /data and changes nothing',
    async (method) => {
      const answer = await changesNothing(t, () =>
        t.request(method, collectionBooks(), { body: { data: identifiers('books', 1001) } }),
      )
      expectBadRequest(answer, overLimit, { pointer: '/data' })
    },
  )

  it('POST to an author with 1001 identifiers is a 400 too', async () => {
    const answer = await changesNothing(t, () =>
      t.post(`/api/v1/authors/${library.authorId}/relationships/books`, { data: identifiers('books', 1001) }),
    )
    expectBadRequest(answer, overLimit, { pointer: '/data' })
  })

  it('takes 1000 identifiers: they are looked up (here none exists, so 404)', async () => {
    const answer = await changesNothing(t, () => t.post(collectionBooks(), { data: identifiers('books', 1000, 1001) }))
    expect(answer.status).toBe(404)
    expect(answer.json.errors[0].detail).toStartWith('There are no books 1001, 1002,')
  })

  it('limits each to-many member list of an atomic request, pointing at its operation', async () => {
    const answer = await changesNothing(t, () =>
      operations([
        { op: 'add', data: { type: 'authors', attributes: { name: 'Not stored' } } },
        {
          op: 'add',
          ref: { type: 'book_collections', id: library.collectionId, relationship: 'books' },
          data: identifiers('books', 1001),
        },
      ]),
    )
    expectBadRequest(answer, overLimit, { pointer: '/atomic:operations/1/data' })
  })

  it('takes its limit from the maxRelationshipIds setting, in REST and atomic requests alike', async () => {
    await withLimits({ limits: { maxRelationshipIds: 2 } })
    const second = await t.create('books', { name: 'The Dispossessed', author_id: Number(library.authorId) })
    const books = [
      { type: 'books', id: library.bookId },
      { type: 'books', id: second },
    ]
    const replaced = await t.request('PATCH', collectionBooks(), { body: { data: books } })
    expect(replaced.status).toBe(200)
    expect(replaced.json.data).toEqual(books)
    const three = [...books, { type: 'books', id: second }]
    expectBadRequest(
      await changesNothing(t, () => t.request('PATCH', collectionBooks(), { body: { data: three } })),
      'A relationship write takes at most 2 resource identifiers (got 3)',
      { pointer: '/data' },
    )
    const ref = { type: 'book_collections', id: library.collectionId, relationship: 'books' }
    expect((await operations([{ op: 'update', ref, data: books }])).status).toBe(200)
    expectBadRequest(
      await changesNothing(t, () => operations([{ op: 'update', ref, data: three }])),
      'A relationship write takes at most 2 resource identifiers (got 3)',
      { pointer: '/atomic:operations/0/data' },
    )
  })
})

describe('error documents: at most MAX_ERRORS errors in full (100), then one that counts the rest', () => {
  /** `count` attributes no type has: attr_000000, attr_000001, ... */
  function unknownAttributes(count: number): Record<string, number> {
    const attributes: Record<string, number> = {}
    for (let i = 0; i < count; i++) attributes[`attr_${String(i).padStart(6, '0')}`] = 1
    return attributes
  }
  const unknown = (i: number) => {
    const name = `attr_${String(i).padStart(6, '0')}`
    return invalid(
      `${name.charAt(0).toUpperCase()}${name.slice(1).replaceAll('_', ' ')} is not a known attribute`,
      name,
    )
  }

  it('answers a 1 MB body of 60,000 unknown attributes with 101 errors in a small document', async () => {
    // Over the members limit by default (see below): raised, to reach the validation.
    await withLimits({ limits: { maxBodyMembers: 100_000 } })
    const body = JSON.stringify({
      data: { type: 'authors', attributes: { name: 'Fine', ...unknownAttributes(60_000) } },
    })
    expect(body.length).toBeGreaterThan(900_000)
    const answer = await changesNothing(t, () => t.post('/api/v1/authors', body))
    expect(answer.status).toBe(422)
    expect(answer.json.errors).toHaveLength(101)
    expect(answer.json.errors.slice(0, 100)).toEqual(Array.from({ length: 100 }, (_, i) => unknown(i)))
    expect(answer.json.errors[100]).toEqual({
      title: 'Unprocessable Entity',
      detail: 'and 59,900 more errors like these',
    })
    expect(answer.text.length).toBeLessThan(20_000)
  })

  it('caps an update and an atomic operation the same way', async () => {
    const attributes = unknownAttributes(1000)
    const update = await changesNothing(t, () =>
      t.request('PATCH', `/api/v1/authors/${library.authorId}`, { body: { data: { type: 'authors', attributes } } }),
    )
    expect(update.json.errors).toHaveLength(101)
    expect(update.json.errors[100].detail).toBe('and 900 more errors like these')

    const atomic = await changesNothing(t, () => operations([{ op: 'add', data: { type: 'authors', attributes } }]))
    expect(atomic.status).toBe(422)
    expect(atomic.json.errors).toHaveLength(101)
    expect(atomic.json.errors[0].source.pointer).toBe('/atomic:operations/0/data/attributes/name')
    expect(atomic.json.errors[99].source.pointer).toBe('/atomic:operations/0/data/attributes/attr_000098')
    // 1001 errors: the missing name, then 1000 unknown attributes.
    expect(atomic.json.errors[100]).toEqual({ title: 'Unprocessable Entity', detail: 'and 901 more errors like these' })
  })

  it('lists 101 errors in full: a summary would stand for a single one', async () => {
    const body = { data: { type: 'authors', attributes: { name: 'Fine', ...unknownAttributes(101) } } }
    const answer = await t.post('/api/v1/authors', body)
    expect(answer.json.errors).toEqual(Array.from({ length: 101 }, (_, i) => unknown(i)))
  })

  it('counts the rest from 102 errors on', async () => {
    const body = { data: { type: 'authors', attributes: { name: 'Fine', ...unknownAttributes(102) } } }
    const answer = await t.post('/api/v1/authors', body)
    expect(answer.json.errors).toHaveLength(101)
    expect(answer.json.errors[100]).toEqual({ title: 'Unprocessable Entity', detail: 'and 2 more errors like these' })
  })

  it('takes its limit from the maxErrors setting', async () => {
    await withLimits({ limits: { maxErrors: 2 } })
    const answer = await t.post('/api/v1/authors', { data: { type: 'authors', attributes: unknownAttributes(5) } })
    expect(answer.json.errors).toEqual([
      invalid("Name can't be blank", 'name'),
      unknown(0),
      { title: 'Unprocessable Entity', detail: 'and 4 more errors like these' },
    ])
  })
})

describe('atomic requests: at most MAX_ATOMIC_IDS resource identifiers in all their operations (3,000)', () => {
  /** `count` operations, each setting a collection's books to `each` identifiers (none of which exists). */
  function replacements(count: number, each: number): unknown[] {
    const ref = { type: 'book_collections', id: library.collectionId, relationship: 'books' }
    return Array.from({ length: count }, (_, i) => ({ op: 'update', ref, data: identifiers('books', each, 1000 + i) }))
  }

  it('counts them across operations: 100 operations of 31 answer 400 naming the limit and the count', async () => {
    const answer = await changesNothing(t, () => operations(replacements(100, 31)))
    expectBadRequest(answer, 'A request takes at most 3000 resource identifiers in all its operations (got 3100)', {
      pointer: '/atomic:operations',
    })
  })

  it('takes 100 operations of 30: they are looked up (here none exists, so 404)', async () => {
    const answer = await changesNothing(t, () => operations(replacements(100, 30)))
    expect(answer.status).toBe(404)
    expect(answer.json.errors[0].source.pointer).toBe('/atomic:operations/0/data')
  })

  it('takes its limit from the maxAtomicIds setting', async () => {
    await withLimits({ limits: { maxAtomicIds: 3 } })
    const second = await t.create('books', { name: 'The Dispossessed', author_id: Number(library.authorId) })
    const ref = { type: 'book_collections', id: library.collectionId, relationship: 'books' }
    const book = (id: string) => ({ type: 'books', id })
    const three = [
      { op: 'update', ref, data: [book(library.bookId), book(second)] },
      { op: 'remove', ref, data: [book(second)] },
    ]
    expect((await operations(three)).status).toBe(200)
    expectBadRequest(
      await changesNothing(t, () => operations([...three, { op: 'add', ref, data: [book(second)] }])),
      'A request takes at most 3 resource identifiers in all its operations (got 4)',
      { pointer: '/atomic:operations' },
    )
  })
})

describe('request bodies: at most MAX_BODY_MEMBERS object members (20,000), counted before parsing', () => {
  /** An author document with `count` attributes beside its name: `count` + 4 members in all. */
  function withAttributes(count: number, value = '1'): string {
    const extra = Array.from({ length: count }, (_, i) => `,"a${i}":${value}`).join('')
    return `{"data":{"type":"authors","attributes":{"name":"Many Members"${extra}}}}`
  }

  it('answers a body of 20,001 members 413 naming the limit, and stores nothing', async () => {
    const answer = await changesNothing(t, () => t.post('/api/v1/authors', withAttributes(19_997)))
    expectOneError(answer, 413)
    expect(answer.json.errors[0].detail).toBe(
      'The request body holds more than 20000 members (name/value pairs in its objects), the limit',
    )
  })

  it('reads a body of 20,000 members: its unknown attributes are a 422', async () => {
    const answer = await changesNothing(t, () => t.post('/api/v1/authors', withAttributes(19_996)))
    expect(answer.status).toBe(422)
  })

  it('answers the 1 MB body of 110,000 unknown attributes 413 before parsing it', async () => {
    const body = withAttributes(110_000, '0').replaceAll(/"a(\d+)"/g, (_, n) => `"${Number(n).toString(36)}"`)
    expect(body.length).toBeLessThanOrEqual(1024 * 1024)
    expectOneError(await changesNothing(t, () => t.post('/api/v1/authors', body)), 413)
  })

  it('answers an atomic request of 100 to-many operations of 350 identifiers (1 MB) 413', async () => {
    const ref = { type: 'book_collections', id: library.collectionId, relationship: 'books' }
    const list = Array.from({ length: 100 }, (_, i) => ({ op: 'update', ref, data: identifiers('books', 350, i) }))
    expectOneError(await changesNothing(t, () => operations(list)), 413)
  })

  /** Reopens the app, empty (seeding takes more members than these limits allow). */
  async function withMembers(maxBodyMembers: number): Promise<void> {
    await t.close()
    t = await openTestApp({ limits: { maxBodyMembers } })
  }

  it('counts only what is outside strings: colons, quotes and escapes in a value are text', async () => {
    await withMembers(5)
    const name = 'A: "quoted" \\: name'.repeat(40)
    const body = JSON.stringify({ data: { type: 'authors', attributes: { name } } })
    expect(body.split(':').length).toBeGreaterThan(20)
    expect((await t.post('/api/v1/authors', body)).status).toBe(201)
    const six = JSON.stringify({ data: { type: 'authors', attributes: { name: 'Six', x: 1, y: 2 } } }).padEnd(100)
    expectOneError(await changesNothing(t, () => t.post('/api/v1/authors', six)), 413)
  })

  it('takes its limit from the maxBodyMembers setting', async () => {
    await withMembers(4)
    // data, type, attributes, name: 4.
    expect((await t.post('/api/v1/authors', { data: { type: 'authors', attributes: { name: 'Four' } } })).status).toBe(
      201,
    )
    const five = { data: { type: 'authors', attributes: { name: 'Five', extra: 1 } } }
    expectOneError(await changesNothing(t, () => t.post('/api/v1/authors', five)), 413)
  })
})

describe('GET /api/v1/openapi.json', () => {
  it('states each limit where its parameter or body is described', async () => {
    const spec = (await t.get('/api/v1/openapi.json', { accept: 'application/json' })).json
    const parameter = (name: string) =>
      spec.paths['/api/v1/books'].get.parameters.find((p: { name: string }) => p.name === name).description
    expect(parameter('include')).toContain('at most 10 paths, each at most 3 relationships deep')
    expect(parameter('filter[search]')).toContain('At most 10 words')
    expect(parameter('filter[author]')).toContain('At most 100 ids')
    const members =
      spec.paths['/api/v1/book_collections/{id}/relationships/books'].post.requestBody.content[
        'application/vnd.api+json'
      ].schema.properties.data
    expect(members.description).toContain('At most 1000 identifiers')
  })
})
