/** The requests the parts of the bench send, as load plans over a seeded data set. */
import { type DataSet, SEED } from '../data/seed'
import type { Plan } from './scenario'

export function getBook(set: DataSet): Plan {
  return { method: 'GET', path: '/api/v1/books/{n}', randomMax: set.books, expectStatus: 200 }
}
export const postBook = {
  method: 'POST',
  path: '/api/v1/books',
  body: '{"data":{"type":"book","attributes":{"name":"Bench book {seq}","author_id":{n}}}}',
  randomMax: SEED.authors,
  expectStatus: 201,
} as const
/** A rename of one of the seeded books: the id in the path and in the body. */
export const patchBook = {
  method: 'PATCH',
  path: '/api/v1/books/{n}',
  body: '{"data":{"type":"book","id":"{n}","attributes":{"name":"Renamed book {seq}"}}}',
  randomMax: SEED.books,
  expectStatus: 200,
} as const
/** Deletes the books seeded after the 10,000 (ids 10,001 on), a different one each request. */
export const deleteBook = {
  method: 'DELETE',
  path: '/api/v1/books/{next}',
  randomMax: 1,
  expectStatus: 204,
  sequenceFrom: SEED.books + 1,
} as const
export const pageOfBooks = (n: number | '{n}') => `/api/v1/books?page[number]=${n}&page[size]=20`
