import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { openTestApp, type TestApp } from '../support/harness'

// Authors and book collections have the same interface: a name and a to-many `books`.
const types = [
  { type: 'authors', singular: 'author', inverse: 'author_id' },
  { type: 'book_collections', singular: 'book_collection', inverse: 'book_collection_id' },
] as const

for (const { type, singular, inverse } of types) {
  describe(`/api/v1/${type}`, () => {
    let t: TestApp
    beforeAll(async () => {
      t = await openTestApp()
    })
    afterAll(() => t.close())

    const unlinked = (id: string, name: string) => ({
      id,
      type,
      attributes: { name },
      relationships: { books: { meta: { included: false } } },
    })

    describe(`POST /api/v1/${type}`, () => {
      it(`creates a record from data.type "${singular}" and answers 201 with it`, async () => {
        const answer = await t.post(`/api/v1/${type}`, { data: { type: singular, attributes: { name: 'First' } } })
        expect(answer.status).toBe(201)
        expect(answer.headers.get('content-type')).toBe('application/vnd.api+json; charset=utf-8')
        expect(answer.json).toEqual({ data: unlinked(answer.json.data.id, 'First') })
        expect(answer.headers.get('location')).toBe(`/api/v1/${type}/${answer.json.data.id}`)
        expect((await t.stored(type)).at(-1)).toEqual({ id: Number(answer.json.data.id), name: 'First' })
      })

      it(`accepts the plural data.type "${type}" too`, async () => {
        const answer = await t.post(`/api/v1/${type}`, { data: { type, attributes: { name: 'Plural' } } })
        expect(answer.status).toBe(201)
        expect(answer.json.data.attributes).toEqual({ name: 'Plural' })
      })

      it('keeps the name exactly as sent, unicode and surrounding spaces included', async () => {
        const answer = await t.post(`/api/v1/${type}`, { data: { type, attributes: { name: '  Émile Zola 📚 ' } } })
        expect(answer.json.data.attributes.name).toBe('  Émile Zola 📚 ')
      })

      it('rejects a name with a lone surrogate with 422, rather than store it changed', async () => {
        const before = await t.stored(type)
        const answer = await t.post(`/api/v1/${type}`, { data: { type, attributes: { name: 'Broken \ud800 name' } } })
        expect(answer.status).toBe(422)
        expect(answer.json.errors.map((e: { detail: string }) => e.detail)).toEqual(['Name must be valid Unicode text'])
        expect(await t.stored(type)).toEqual(before)
      })

      it('rejects a blank name with 422 and stores nothing', async () => {
        const before = await t.stored(type)
        const answer = await t.post(`/api/v1/${type}`, { data: { type: singular, attributes: { name: '' } } })
        expect(answer.status).toBe(422)
        expect(answer.json).toEqual({
          errors: [
            {
              title: 'Unprocessable Entity',
              detail: "Name can't be blank",
              source: { parameter: 'name', pointer: 'data/attributes/name' },
            },
          ],
        })
        expect(await t.stored(type)).toEqual(before)
      })
    })

    describe(`GET /api/v1/${type}`, () => {
      it('lists every record in id order with relationships as meta.included = false', async () => {
        const answer = await t.get(`/api/v1/${type}`)
        expect(answer.status).toBe(200)
        expect(answer.json).toEqual({
          data: (await t.stored(type)).map((row) => unlinked(String(row.id), String(row.name))),
        })
      })
    })

    describe(`GET /api/v1/${type}/{id}`, () => {
      it('renders books linkage and includes the full book records', async () => {
        const owner = await t.create(type, { name: 'Owner' })
        const author = type === 'authors' ? owner : await t.create('authors', { name: 'Someone' })
        const first = await t.create('books', { name: 'One', author_id: Number(author), [inverse]: Number(owner) })
        const second = await t.create('books', { name: 'Two', author_id: Number(author), [inverse]: Number(owner) })
        const answer = await t.get(`/api/v1/${type}/${owner}`)
        expect(answer.status).toBe(200)
        const book = (id: string, name: string) => ({
          id,
          type: 'books',
          attributes: { name },
          relationships: { author: { meta: { included: false } }, book_collection: { meta: { included: false } } },
        })
        expect(answer.json).toEqual({
          data: {
            id: owner,
            type,
            attributes: { name: 'Owner' },
            relationships: {
              books: {
                data: [
                  { type: 'books', id: first },
                  { type: 'books', id: second },
                ],
              },
            },
          },
          included: [book(first, 'One'), book(second, 'Two')],
        })
      })

      it('renders an empty books array and leaves out included when there are no books', async () => {
        const id = await t.create(type, { name: 'Lonely' })
        const answer = await t.get(`/api/v1/${type}/${id}`)
        expect(answer.json).toEqual({
          data: { id, type, attributes: { name: 'Lonely' }, relationships: { books: { data: [] } } },
        })
      })

      it('answers 404 with an empty errors array for an id that matches no record', async () => {
        const answer = await t.get(`/api/v1/${type}/999999`)
        expect(answer.status).toBe(404)
        expect(answer.json).toEqual({ errors: [] })
      })
    })

    for (const method of ['PUT', 'PATCH']) {
      describe(`${method} /api/v1/${type}/{id}`, () => {
        it('updates the name and answers 200 with the record', async () => {
          const id = await t.create(type, { name: 'Old' })
          const answer = await t.request(method, `/api/v1/${type}/${id}`, {
            body: { data: { type: singular, id: Number(id), attributes: { name: 'New' } } },
          })
          expect(answer.status).toBe(200)
          expect(answer.json).toEqual({ data: unlinked(id, 'New') })
          expect((await t.stored(type)).find((row) => row.id === Number(id))).toEqual({ id: Number(id), name: 'New' })
        })

        it('leaves the record as it is when no attribute is sent', async () => {
          const id = await t.create(type, { name: 'Same' })
          const answer = await t.request(method, `/api/v1/${type}/${id}`, { body: { data: { type, id } } })
          expect(answer.status).toBe(200)
          expect(answer.json).toEqual({ data: unlinked(id, 'Same') })
        })

        it('rejects a blank name with 422 and changes nothing', async () => {
          const id = await t.create(type, { name: 'Kept' })
          const answer = await t.request(method, `/api/v1/${type}/${id}`, {
            body: { data: { type, id, attributes: { name: '  ' } } },
          })
          expect(answer.status).toBe(422)
          expect(answer.json.errors).toEqual([
            {
              title: 'Unprocessable Entity',
              detail: "Name can't be blank",
              source: { parameter: 'name', pointer: 'data/attributes/name' },
            },
          ])
          expect((await t.stored(type)).find((row) => row.id === Number(id))).toEqual({ id: Number(id), name: 'Kept' })
        })
      })
    }

    describe(`DELETE /api/v1/${type}/{id}`, () => {
      it('deletes a record and answers 204 with no body', async () => {
        const id = await t.create(type, { name: 'Doomed' })
        const answer = await t.request('DELETE', `/api/v1/${type}/${id}`)
        expect(answer.status).toBe(204)
        expect(answer.text).toBe('')
        expect(answer.headers.get('content-type')).toBeNull()
        expect((await t.get(`/api/v1/${type}/${id}`)).status).toBe(404)
      })

      it('answers 404 with an empty errors array the second time', async () => {
        const id = await t.create(type, { name: 'Twice' })
        await t.request('DELETE', `/api/v1/${type}/${id}`)
        const answer = await t.request('DELETE', `/api/v1/${type}/${id}`)
        expect(answer.status).toBe(404)
        expect(answer.json).toEqual({ errors: [] })
      })

      it('never hands out a deleted id again', async () => {
        const id = await t.create(type, { name: 'Last' })
        await t.request('DELETE', `/api/v1/${type}/${id}`)
        expect(Number(await t.create(type, { name: 'Next' }))).toBeGreaterThan(Number(id))
      })
    })
  })
}

describe('deleting related records', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await openTestApp()
  })
  afterAll(() => t.close())

  it('refuses to delete an author who still has books with 409 and deletes nothing', async () => {
    const author = await t.create('authors', { name: 'Busy' })
    await t.create('books', { name: 'A', author_id: Number(author) })
    await t.create('books', { name: 'B', author_id: Number(author) })
    const before = { authors: await t.stored('authors'), books: await t.stored('books') }
    const answer = await t.request('DELETE', `/api/v1/authors/${author}`)
    expect(answer.status).toBe(409)
    expect(answer.json).toEqual({
      errors: [
        {
          status: '409',
          title: 'Conflict',
          detail: `Author ${author} still has 2 books; delete them or give them another author first`,
        },
      ],
    })
    expect({ authors: await t.stored('authors'), books: await t.stored('books') }).toEqual(before)
  })

  it('deletes an author once the last book is gone', async () => {
    const author = await t.create('authors', { name: 'Freed' })
    const book = await t.create('books', { name: 'Only', author_id: Number(author) })
    expect((await t.request('DELETE', `/api/v1/authors/${author}`)).json.errors[0].detail).toBe(
      `Author ${author} still has 1 book; delete it or give it another author first`,
    )
    expect((await t.request('DELETE', `/api/v1/books/${book}`)).status).toBe(204)
    expect((await t.request('DELETE', `/api/v1/authors/${author}`)).status).toBe(204)
  })

  it('keeps the books of a deleted collection, which then belong to no collection', async () => {
    const author = await t.create('authors', { name: 'Writer' })
    const collection = await t.create('book_collections', { name: 'Gone' })
    const book = await t.create('books', {
      name: 'Stays',
      author_id: Number(author),
      book_collection_id: Number(collection),
    })
    expect((await t.request('DELETE', `/api/v1/book_collections/${collection}`)).status).toBe(204)
    const answer = await t.get(`/api/v1/books/${book}`)
    expect(answer.status).toBe(200)
    expect(answer.json.data.relationships.book_collection).toEqual({ data: null })
    expect(answer.json.included.map((r: { type: string }) => r.type)).toEqual(['authors'])
  })
})
