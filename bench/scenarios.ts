import type { LoadPlan } from './load'
import { MODERATE_CONCURRENCY } from './report'
import { type DataSet, LARGE, SEED } from './seed'

const HEAVY_CONCURRENCY = 64

export interface Scenario {
  readonly name: string
  readonly concurrency: number
  /** Also run against the reference server, which has a route for it that renders the same bytes. */
  readonly withReference: boolean
  readonly ratioTarget: boolean
  readonly p99Target: boolean
  readonly plan: Pick<LoadPlan, 'method' | 'path' | 'body' | 'randomMax' | 'expectStatus'>
}

type Plan = Scenario['plan']

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
const byAuthor = {
  method: 'GET',
  path: '/api/v1/books?author_id={n}',
  randomMax: SEED.authors,
  expectStatus: 200,
} as const
const allBooks = { method: 'GET', path: '/api/v1/books', randomMax: 1, expectStatus: 200 } as const
/** One fixed request, the same every time. */
const fixed = (path: string): Plan => ({ method: 'GET', path, randomMax: 1, expectStatus: 200 })

/** Compared with the reference and held to the targets (the routes the issue names). */
function compared(name: string, concurrency: number, plan: Plan): Scenario {
  return { name, concurrency, withReference: true, ratioTarget: true, p99Target: true, plan }
}

/** Compared with the reference, but reported only: no target covers it. */
function reported(name: string, plan: Plan): Scenario {
  return {
    name,
    concurrency: MODERATE_CONCURRENCY,
    withReference: true,
    ratioTarget: false,
    p99Target: false,
    plan,
  }
}

// POST runs last so that the list scenarios see exactly the seeded books.
export const scenarios: readonly Scenario[] = [
  compared('GET one book', MODERATE_CONCURRENCY, getBook(SEED)),
  compared('GET one book', HEAVY_CONCURRENCY, getBook(SEED)),
  // The issue holds GET one book and POST to the targets; the lists are reported beside them,
  // against the reference's lists written whole (the service streams them).
  reported(`GET books by author (~${SEED.books / SEED.authors} each)`, byAuthor),
  // A 1.8 MB answer, at 8 connections as issue 10 measures it.
  { ...reported(`GET all ${SEED.books.toLocaleString('en-US')} books`, allBooks), concurrency: 8 },
  compared('POST a book', MODERATE_CONCURRENCY, postBook),
  compared('POST a book', HEAVY_CONCURRENCY, postBook),
]

/** What the large scenarios need from the running service: found by asking it, as a client would. */
export interface LargeInputs {
  /** A word of the titles, then an author's surname: its 1,000 books match in the author_name column. */
  readonly searches: readonly { readonly path: string; readonly word: string; readonly hits: number }[]
  readonly cursor: { readonly path: string; readonly pagesIn: number }
  readonly deepPage: { readonly path: string; readonly number: number; readonly size: number }
}

/** The scenarios at 100,000 books; every one of them has a reference route. No writes: the data stay as seeded. */
export function largeScenarios({ searches, cursor, deepPage }: LargeInputs): Scenario[] {
  const perAuthor = (LARGE.books / LARGE.authors).toLocaleString('en-US')
  return [
    reported('GET one book', getBook(LARGE)),
    ...searches.map((search) =>
      reported(
        `search "${search.word}", first page of 20 of ${search.hits.toLocaleString('en-US')} hits`,
        fixed(search.path),
      ),
    ),
    reported(
      `offset page ${deepPage.number.toLocaleString('en-US')} of ${deepPage.size} (offset ${((deepPage.number - 1) * deepPage.size).toLocaleString('en-US')})`,
      fixed(deepPage.path),
    ),
    reported(`cursor page of 20 (a cursor ${cursor.pagesIn} pages in, replayed)`, fixed(cursor.path)),
    reported(`GET an author with include=books (${perAuthor} books)`, {
      method: 'GET',
      path: '/api/v1/authors/{n}?include=books',
      randomMax: LARGE.authors,
      expectStatus: 200,
    }),
  ]
}
