import type { LoadPlan } from './load'
import { MODERATE_CONCURRENCY } from './report'
import { SEED } from './seed'

const HEAVY_CONCURRENCY = 64

export interface Scenario {
  readonly name: string
  readonly concurrency: number
  /** Also run against the reference server (it has only GET one book and POST). */
  readonly withReference: boolean
  readonly ratioTarget: boolean
  readonly p99Target: boolean
  readonly plan: Pick<LoadPlan, 'method' | 'path' | 'body' | 'randomMax' | 'expectStatus'>
}

export const getBook = { method: 'GET', path: '/api/v1/books/{n}', randomMax: SEED.books, expectStatus: 200 } as const
const postBook = {
  method: 'POST',
  path: '/api/v1/books',
  body: '{"data":{"type":"book","attributes":{"name":"Bench book {seq}","author_id":{n}}}}',
  randomMax: SEED.authors,
  expectStatus: 201,
} as const
const byAuthor = {
  method: 'GET',
  path: '/api/v1/books?author_id={n}',
  randomMax: SEED.authors,
  expectStatus: 200,
} as const
const allBooks = { method: 'GET', path: '/api/v1/books', randomMax: 1, expectStatus: 200 } as const

/** The two routes the reference has are compared with it and held to the ratio target. */
function compared(name: string, concurrency: number, plan: Scenario['plan']): Scenario {
  return { name, concurrency, withReference: true, ratioTarget: true, p99Target: true, plan }
}

function serviceOnly(name: string, plan: Scenario['plan'], p99Target: boolean): Scenario {
  return { name, concurrency: MODERATE_CONCURRENCY, withReference: false, ratioTarget: false, p99Target, plan }
}

// POST runs last so that the list scenarios see exactly the seeded books.
export const scenarios: readonly Scenario[] = [
  compared('GET one book', MODERATE_CONCURRENCY, getBook),
  compared('GET one book', HEAVY_CONCURRENCY, getBook),
  // The issue holds GET one book and POST to the targets; the lists are reported beside them.
  serviceOnly(`GET books by author (~${SEED.books / SEED.authors} each)`, byAuthor, false),
  // A 1.8 MB answer: reported, but not held to a latency meant for single records.
  serviceOnly(`GET all ${SEED.books.toLocaleString('en-US')} books`, allBooks, false),
  compared('POST a book', MODERATE_CONCURRENCY, postBook),
  compared('POST a book', HEAVY_CONCURRENCY, postBook),
]
