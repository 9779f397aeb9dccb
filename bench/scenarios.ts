import type { Durability } from '../src/store/sqlite/open-database'
import type { LoadPlan } from './load'
import { MODERATE_CONCURRENCY } from './report'
import { type DataSet, LARGE, SEED } from './seed'

/**
 * The baselines beyond the raw reference (bench/reference.ts) a scenario can be measured beside:
 * `whole`, the raw reference writing the unpaginated lists whole (the raw reference proper streams
 * them in the comparison); `grouped`, the raw reference committing writes in groups as the service
 * does (the raw reference proper commits each alone); `elysia`, the minimal Elysia app; `express`,
 * Express + jsonapi-serializer.
 */
export type BaselineName = 'whole' | 'grouped' | 'elysia' | 'express'

/** What issue 10 holds a scenario to (bench/report.ts, comparisonTargets); none where absent. */
export type Target = { readonly kind: 'read' } | { readonly kind: 'write'; readonly durability: Durability }

export interface Scenario {
  readonly name: string
  readonly concurrency: number
  /** Also run against the raw reference server, which has a route for it that renders the same bytes. */
  readonly withReference: boolean
  /** Further baselines to run it against, where the part of the bench started them. */
  readonly baselines?: readonly BaselineName[]
  readonly target?: Target
  /** How many ids its `{next}` sequence has (the books a DELETE run may delete). */
  readonly sequenceCount?: number
  readonly plan: Pick<LoadPlan, 'method' | 'path' | 'body' | 'randomMax' | 'expectStatus' | 'sequenceFrom'>
}

type Plan = Scenario['plan']

/** The connections of the comparison (issue 10's table, run with wrk)... */
export const COMPARE_CONCURRENCY = 32
/** ...but for the whole list, a 1.8 MB answer: 8. */
export const LIST_CONCURRENCY = 8
/** The page scenario draws its page from the first 50 (offsets up to 980). */
export const COMPARED_PAGES = 50

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
/**
 * Books seeded after the 10,000 of the write runs' files (ids 10,001 on), for DELETE to delete:
 * each DELETE deletes a different one, taking the ids in turn (`{next}`). A server's DELETE runs
 * take 8 s (2 rounds of 1 s of warm-up and 3 s measured): enough for 30,000 deletes a second, twice
 * the fastest measured (the service at DURABILITY=normal, 13,000 a second). A server that deletes
 * faster runs out: its last requests get 404, which fails the run and says so (bench/measure.ts).
 * Seeding them costs about 10 s.
 */
export const DELETE_STOCK = 250_000
/** The data of the write runs: the 10,000 books, then the stock DELETE deletes from (ids 10,001 on). */
export const WRITE_SET: DataSet = { ...SEED, books: SEED.books + DELETE_STOCK }
export const deleteBook = {
  method: 'DELETE',
  path: '/api/v1/books/{next}',
  randomMax: 1,
  expectStatus: 204,
  sequenceFrom: SEED.books + 1,
} as const
export const pageOfBooks = (n: number | '{n}') => `/api/v1/books?page[number]=${n}&page[size]=20`
const byAuthor = {
  method: 'GET',
  path: '/api/v1/books?author_id={n}',
  randomMax: SEED.authors,
  expectStatus: 200,
} as const
const allBooks = { method: 'GET', path: '/api/v1/books', randomMax: 1, expectStatus: 200 } as const
/** One fixed request, the same every time. */
const fixed = (path: string): Plan => ({ method: 'GET', path, randomMax: 1, expectStatus: 200 })

/** Compared with the reference, but reported only: no target covers it. */
function reported(name: string, plan: Plan): Scenario {
  return { name, concurrency: MODERATE_CONCURRENCY, withReference: true, plan }
}

/** A read of the comparison: beside the raw reference, Elysia and Express (and, for the unpaginated lists, the raw reference writing them whole). */
function compared(name: string, plan: Plan, list = false, concurrency = COMPARE_CONCURRENCY): Scenario {
  return {
    name,
    concurrency,
    withReference: true,
    baselines: list ? ['whole', 'elysia', 'express'] : ['elysia', 'express'],
    target: { kind: 'read' },
    plan,
  }
}

/** Issue 10's reads at 10,000 books; the raw reference streams the unpaginated lists, as the service does. */
export const readScenarios: readonly Scenario[] = [
  compared('GET one book', getBook(SEED)),
  compared(`page of 20 (one of the first ${COMPARED_PAGES})`, {
    method: 'GET',
    path: pageOfBooks('{n}'),
    randomMax: COMPARED_PAGES,
    expectStatus: 200,
  }),
  compared(`GET books by author (${SEED.books / SEED.authors} each)`, byAuthor, true),
  compared(`GET all ${SEED.books.toLocaleString('en-US')} books`, allBooks, true, LIST_CONCURRENCY),
]

/**
 * Issue 10's writes at one DURABILITY, beside the raw reference (committing each write alone, and in
 * groups), Elysia and Express at the same setting.
 */
export function writeScenarios(durability: Durability): Scenario[] {
  const write = (name: string, plan: Plan, sequenceCount?: number): Scenario => ({
    name: `${name} (DURABILITY=${durability})`,
    concurrency: COMPARE_CONCURRENCY,
    withReference: true,
    baselines: ['grouped', 'elysia', 'express'],
    target: { kind: 'write', durability },
    ...(sequenceCount === undefined ? {} : { sequenceCount }),
    plan,
  })
  return [
    write('POST a book', postBook),
    write('PATCH a book (rename)', patchBook),
    write('DELETE a book', deleteBook, DELETE_STOCK),
  ]
}

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
