/**
 * The service beside the raw reference at 100,000 books (part of the full run): GET one book, two
 * searches, a deep offset page, a replayed cursor page and an author with its books, each request
 * found by asking the service as a client would, and the edges of the pages compared byte for byte
 * before measuring. Reported only: no target covers it.
 */
import { encodeCursor } from '../../src/jsonapi/cursor'
import { AUTHOR_SURNAME, LARGE, SEARCH_WORD } from '../data/seed'
import { compareAnswers } from '../harness/compare'
import { measuredSeconds, pinning, runScenario, warmUp } from '../harness/measure'
import { getBook } from '../harness/requests'
import { MODERATE_CONCURRENCY, type Plan, type Scenario, type ScenarioResult } from '../harness/scenario'
import { startPair, stopPair } from '../harness/server-pairs'
import type { RunningServer } from '../harness/servers'
import { cpuTable, referenceNote, table } from '../harness/tables'

const CURSOR_PAGES_IN = 5
const DEEP_PAGE = { number: 2000, size: 20 }

/** One fixed request, the same every time. */
const fixed = (path: string): Plan => ({ method: 'GET', path, randomMax: 1, expectStatus: 200 })

/** Compared with the reference, but reported only: no target covers it. */
function reported(name: string, plan: Plan): Scenario {
  return { name, concurrency: MODERATE_CONCURRENCY, withReference: true, plan }
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

async function getJson(
  server: RunningServer,
  path: string,
): Promise<{ meta?: { total?: number }; links?: Record<string, string> }> {
  const response = await fetch(server.origin + path, { headers: { accept: 'application/vnd.api+json' } })
  if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}`)
  return (await response.json()) as { meta?: { total?: number }; links?: Record<string, string> }
}

/** The large scenarios' requests, found as a client would: hit counts from meta.total, a cursor from links.next. */
async function largeInputs(service: RunningServer): Promise<LargeInputs> {
  const searches = []
  for (const word of [SEARCH_WORD, AUTHOR_SURNAME]) {
    const path = `/api/v1/books?filter[search]=${word}&page[size]=20`
    searches.push({ path, word, hits: (await getJson(service, path)).meta?.total ?? 0 })
  }
  let path = '/api/v1/books?page[size]=20&page[after]='
  for (let page = 1; page <= CURSOR_PAGES_IN; page++) {
    const next = (await getJson(service, path)).links?.next
    if (next === undefined) throw new Error(`GET ${path} has no links.next`)
    path = next
  }
  return {
    searches,
    cursor: { path, pagesIn: CURSOR_PAGES_IN },
    deepPage: { ...DEEP_PAGE, path: `/api/v1/books?page[number]=${DEEP_PAGE.number}&page[size]=${DEEP_PAGE.size}` },
  }
}

/** Beyond the scenarios' own requests: the edges of the pages (last, past the end, no hits, the end of the cursor). */
function largeComparisons(inputs: LargeInputs): string[] {
  const byId = [{ field: 'id', descending: false }]
  const lastPage = Math.ceil(LARGE.books / DEEP_PAGE.size)
  return [
    ...inputs.searches.map((s) => s.path),
    ...inputs.searches.map((s) => `${s.path}&page[number]=3`),
    '/api/v1/books?filter[search]=zzzzzz&page[size]=20',
    inputs.deepPage.path,
    `/api/v1/books?page[number]=${lastPage}&page[size]=${DEEP_PAGE.size}`,
    `/api/v1/books?page[number]=${lastPage + 1}&page[size]=${DEEP_PAGE.size}`,
    '/api/v1/books?page[size]=20&page[after]=',
    inputs.cursor.path,
    `/api/v1/books?page[size]=20&page[after]=${encodeCursor('books', byId, [LARGE.books - 10])}`,
    `/api/v1/books?page[size]=20&page[after]=${encodeCursor('books', byId, [LARGE.books])}`,
    '/api/v1/authors/1?include=books',
    `/api/v1/authors/${LARGE.authors}`,
    `/api/v1/authors/${LARGE.authors + 1}?include=books`,
  ]
}

export interface LargeResult {
  readonly results: readonly ScenarioResult[]
  /** Lines the service logged (one per request). */
  readonly loggedLines: number
}

/** `paths` are the seeded 100,000 books' files, one for the service and one for the reference. */
export async function runLarge(
  paths: { readonly service: string; readonly reference: string },
  measureMs: number,
  track: (server: RunningServer) => void,
): Promise<LargeResult> {
  const pair = await startPair(paths, pinning.server, track)
  process.stderr.write(`started the service and the reference on ${LARGE.books.toLocaleString('en-US')} books\n`)
  const inputs = await largeInputs(pair.service)
  await compareAnswers(pair.service, pair.reference, LARGE, { paths: largeComparisons(inputs) })
  process.stderr.write('the reference answers byte for byte as the service does; measuring\n')
  await warmUp(pair.service, getBook(LARGE))
  await warmUp(pair.reference, getBook(LARGE))
  const results: ScenarioResult[] = []
  for (const scenario of largeScenarios(inputs)) {
    results.push(await runScenario(scenario, pair.service, pair.reference, measureMs))
  }
  const loggedLines = pair.service.loggedLines()
  await stopPair(pair)
  return { results, loggedLines }
}

/** The section of the report. */
export function largeSection(results: readonly ScenarioResult[], measureMs: number): string {
  return [
    `### At ${LARGE.books.toLocaleString('en-US')} books, beside the raw reference (${measuredSeconds(measureMs)} s per scenario and server)`,
    '',
    table(results),
    '',
    referenceNote(results),
    'No target covers this table; the cursor replays one fixed cursor, and the search and page scenarios repeat one fixed request.',
    '',
    'Server CPU time (user + system) per request, warm-up included:',
    '',
    cpuTable(results),
  ].join('\n')
}
