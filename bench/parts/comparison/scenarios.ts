/**
 * Issue 10's comparison at 10,000 books: its reads and its writes at one DURABILITY, each beside
 * the raw reference and the baselines, with the target each is held to.
 */
import type { Durability } from '../../../src/store/sqlite/open-database'
import { type DataSet, SEED } from '../../data/seed'
import { deleteBook, getBook, pageOfBooks, patchBook, postBook } from '../../harness/requests'
import type { Plan, Scenario } from '../../harness/scenario'

/** The connections of the comparison (issue 10's table, run with wrk)... */
export const COMPARE_CONCURRENCY = 32
/** ...but for the whole list, a 1.8 MB answer: 8. */
export const LIST_CONCURRENCY = 8
/** The page scenario draws its page from the first 50 (offsets up to 980). */
export const COMPARED_PAGES = 50

/**
 * Books seeded after the 10,000 of the write runs' files (ids 10,001 on), for DELETE to delete:
 * each DELETE deletes a different one, taking the ids in turn (`{next}`). A server's DELETE runs
 * take 8 s (2 rounds of 1 s of warm-up and 3 s measured): enough for 30,000 deletes a second, twice
 * the fastest measured (the service at DURABILITY=normal, 13,000 a second). A server that deletes
 * faster runs out: its last requests get 404, which fails the run and says so (bench/harness/measure.ts).
 * Seeding them costs about 10 s.
 */
export const DELETE_STOCK = 250_000
/** The data of the write runs: the 10,000 books, then the stock DELETE deletes from (ids 10,001 on). */
export const WRITE_SET: DataSet = { ...SEED, books: SEED.books + DELETE_STOCK }
const byAuthor = {
  method: 'GET',
  path: '/api/v1/books?author_id={n}',
  randomMax: SEED.authors,
  expectStatus: 200,
} as const
const allBooks = { method: 'GET', path: '/api/v1/books', randomMax: 1, expectStatus: 200 } as const

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
