import { describe, expect, it } from 'bun:test'
import { JsonApiError } from '../../src/jsonapi/errors'
import { resources } from '../../src/resources/registry'
import { readAtomicRequest } from '../../src/service/atomic-request'

const limits = { maxOperations: 10, maxRelationshipIds: 2, maxAtomicIds: 100 }

/** The status and first error of reading these operations. */
function failureOf(operations: unknown[]): { status: number; detail?: string; pointer?: string } {
  try {
    readAtomicRequest(resources, { 'atomic:operations': operations }, limits)
  } catch (error) {
    if (!(error instanceof JsonApiError)) throw error
    return { status: error.status, detail: error.errors[0]?.detail, pointer: error.errors[0]?.source?.pointer }
  }
  throw new Error('read without a failure')
}

const books = (n: number) => Array.from({ length: n }, (_, i) => ({ type: 'books', id: String(i + 1) }))

describe('an atomic request read with the write rules', () => {
  it("refuses orphaning an author's books before it reads the members", () => {
    const ref = { type: 'authors', id: '1', relationship: 'books' }
    expect(failureOf([{ op: 'remove', ref, data: books(3) }])).toMatchObject({
      status: 403,
      pointer: '/atomic:operations/0/op',
    })
    expect(failureOf([{ op: 'add', ref, data: books(3) }])).toMatchObject({
      status: 400,
      pointer: '/atomic:operations/0/data',
    })
  })

  it("reports a write's invalid fields before a relationship named both by id and by lid", () => {
    const data = {
      type: 'books',
      attributes: { name: '', author_id: '1' },
      relationships: { author: { data: { type: 'authors', lid: 'a' } } },
    }
    expect(failureOf([{ op: 'add', data }])).toMatchObject({
      status: 422,
      pointer: '/atomic:operations/0/data/attributes/name',
    })
    const valid = { ...data, attributes: { name: 'x', author_id: '1' } }
    expect(failureOf([{ op: 'add', data: valid }])).toMatchObject({
      status: 409,
      pointer: '/atomic:operations/0/data/relationships/author',
    })
  })

  it('reports the first operation that fails, rule or malformation', () => {
    const blank = { op: 'add', data: { type: 'authors', attributes: { name: '' } } }
    expect(failureOf([blank, { op: 'bogus' }])).toMatchObject({
      status: 422,
      pointer: '/atomic:operations/0/data/attributes/name',
    })
    expect(failureOf([{ op: 'bogus' }, blank])).toMatchObject({ status: 400, pointer: '/atomic:operations/0/op' })
  })

  it("lets a lid stand for a required to-one, and reads the operations into the store's", () => {
    const operations = readAtomicRequest(
      resources,
      {
        'atomic:operations': [
          { op: 'add', data: { type: 'authors', lid: 'a', attributes: { name: 'Ann' } } },
          {
            op: 'add',
            data: {
              type: 'books',
              attributes: { name: 'B' },
              relationships: { author: { data: { type: 'authors', lid: 'a' } } },
            },
          },
          { op: 'update', ref: { type: 'books', id: '1', relationship: 'book_collection' }, data: null },
        ],
      },
      limits,
    )
    expect(operations.map((o) => o.kind)).toEqual(['create', 'create', 'update'])
    expect(operations[1]).toMatchObject({ input: { attributes: { name: 'B' }, toOne: { author: { lid: 'a' } } } })
    expect(operations[2]).toMatchObject({
      relationship: 'book_collection',
      input: { toOne: { book_collection: null } },
    })
  })
})
