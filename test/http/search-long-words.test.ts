import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { openTestApp, type TestApp } from '../support/harness'

// PostgreSQL's text search holds a word of at most 2,047 bytes: a longer one failed the write or
// the search with a 500 until shared migration 7 cut it (src/store/postgres/long-words.ts). Both
// backends answer alike.

const ids = (answer: { json: { data: { id: string }[] } }) => answer.json.data.map((r) => r.id)

describe('GET /api/v1/books?filter[search] with one very long word', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await openTestApp()
    const author = await t.create('authors', { name: 'Plain Writer' })
    await t.create('books', { name: 'A Short Title', author_id: Number(author) })
  })
  afterAll(() => t.close())

  it('answers 200 and finds nothing for a word of 10,000 letters, as for any word no name holds', async () => {
    for (const word of ['a'.repeat(10_000), '東'.repeat(2_000), `${'a'.repeat(3_000)} short`]) {
      const answer = await t.get(`/api/v1/books?filter[search]=${encodeURIComponent(word)}`)
      expect(answer.status).toBe(200)
      expect(answer.json.data).toEqual([])
    }
  })
})

describe('POST /api/v1/authors with a name of one long word', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await openTestApp()
  })
  afterAll(() => t.close())

  it('stores a name of 1,000 three-byte letters in one word (3,000 bytes), finds it by its start and by its whole, and renames it', async () => {
    const name = '東'.repeat(1_000)
    const created = await t.post('/api/v1/authors', { data: { type: 'authors', attributes: { name } } })
    expect(created.status).toBe(201)
    const id = created.json.data.id
    for (const search of ['東東東', name.slice(0, 700), name]) {
      const found = await t.get(`/api/v1/authors?filter[search]=${encodeURIComponent(search)}`)
      expect(found.status).toBe(200)
      expect(ids(found)).toEqual([id])
    }
    const renamed = await t.request('PATCH', `/api/v1/authors/${id}`, {
      body: { data: { type: 'authors', id, attributes: { name: `${'a'.repeat(999)}東` } } },
    })
    expect(renamed.status).toBe(200)
    expect(ids(await t.get(`/api/v1/authors?filter[search]=${'a'.repeat(500)}`))).toEqual([id])
    // Its books find it too: the author's name is searched with them.
    const book = await t.create('books', { name: 'Plain', author_id: Number(id) })
    expect(ids(await t.get(`/api/v1/books?filter[search]=plain%20${'a'.repeat(999)}`))).toEqual([book])
  })
})
