import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { insertCatalogue } from '../support/bulk'
import { type Answer, JSON_API, openTestApp, type TestApp } from '../support/harness'

let app: TestApp
let authorId: string

beforeAll(async () => {
  app = await openTestApp({ maxBodyBytes: 1000 })
  authorId = await app.create('authors', { name: 'Ursula K. Le Guin' })
})

afterAll(async () => {
  await app.close()
})

function expectSecurityHeaders(answer: Answer): void {
  expect(answer.headers.get('x-content-type-options')).toBe('nosniff')
  expect(answer.headers.get('referrer-policy')).toBe('no-referrer')
}

describe('security headers', () => {
  const author = (name: string) => ({ data: { type: 'author', attributes: { name } } })

  it('are on a 200 list, a 200 record and a 201 create', async () => {
    expectSecurityHeaders(await app.get('/api/v1/authors'))
    expectSecurityHeaders(await app.get(`/api/v1/authors/${authorId}`))
    const created = await app.post('/api/v1/authors', author('Octavia E. Butler'))
    expect(created.status).toBe(201)
    expectSecurityHeaders(created)
  })

  it('are on a 204 delete', async () => {
    const id = await app.create('authors', { name: 'Gone' })
    const deleted = await app.request('DELETE', `/api/v1/authors/${id}`)
    expect(deleted.status).toBe(204)
    expectSecurityHeaders(deleted)
  })

  it('are on error answers: 400, 404, 405, 406, 413, 415, 422', async () => {
    const answers = [
      await app.get('/api/v1/authors?bogus=1'),
      await app.get('/api/v1/authors/999'),
      await app.get('/nowhere'),
      await app.request('PATCH', '/api/v1/authors'),
      await app.send('GET', '/api/v1/authors', { headers: { accept: `${JSON_API}; foo=bar` } }),
      await app.post('/api/v1/authors', author('x'.repeat(2000))),
      await app.send('POST', '/api/v1/authors', { headers: { 'content-type': 'text/plain' }, body: 'x' }),
      await app.post('/api/v1/authors', author('')),
    ]
    expect(answers.map((a) => a.status)).toEqual([400, 404, 404, 405, 406, 413, 415, 422])
    for (const answer of answers) expectSecurityHeaders(answer)
  })

  it('are on the docs page and the OpenAPI document', async () => {
    for (const path of ['/docs', '/api/v1/openapi.json']) {
      const answer = await app.send('GET', path)
      expect(answer.status).toBe(200)
      expectSecurityHeaders(answer)
    }
  })
})

describe('security headers on a streamed answer', () => {
  it('are on a list too large to gather (over 64 KB), answered as a stream', async () => {
    const big = await openTestApp()
    try {
      await insertCatalogue(big, {
        authors: ['A'],
        collections: [],
        books: 2000,
        authorOf: () => 1,
        collectionOf: () => null,
      })
      const answer = await big.get('/api/v1/books')
      expect(answer.status).toBe(200)
      expect(answer.text.length).toBeGreaterThan(64 * 1024)
      expectSecurityHeaders(answer)
    } finally {
      await big.close()
    }
  })
})
