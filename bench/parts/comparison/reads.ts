/**
 * The reads of issue 10's comparison at 10,000 books: the service beside the raw reference
 * streaming its unpaginated lists (bench/references/raw.ts, REFERENCE_LISTS=streamed), the raw reference
 * writing them whole (reported for the lists), the minimal Elysia app and Express +
 * jsonapi-serializer, each on its own copy of the seeded file, all pinned to core 0: GET one book, a
 * page of 20, the books of an author and every book (bench/parts/comparison/scenarios.ts, readScenarios).
 */
import { SEED } from '../../data/seed'
import { type Compared, compareReads } from '../../harness/compare'
import { pinning, runScenario, warmUp } from '../../harness/measure'
import { pageOfBooks } from '../../harness/requests'
import type { ScenarioResult } from '../../harness/scenario'
import { startComparison, stopComparison } from '../../harness/server-pairs'
import { copiesFor, type RunningServer } from '../../harness/servers'
import { COMPARED_PAGES, readScenarios } from './scenarios'

export interface ReadsResult {
  readonly results: readonly ScenarioResult[]
  /** Lines the service logged (one per request). */
  readonly loggedLines: number
}

/** `pristine` is the file of the 10,000 books as seeded. */
export async function runReads(
  pristine: string,
  dir: string,
  measureMs: number,
  track: (server: RunningServer) => void,
): Promise<ReadsResult> {
  const files = copiesFor(pristine, dir, 'reads', ['service', 'reference', 'whole', 'elysia', 'express'])
  const servers = await startComparison(files, pinning.server, track)
  try {
    const { service, reference, others } = servers
    const bytes: Compared[] = [reference, others.whole, others.elysia].flatMap((server) =>
      server === undefined ? [] : [{ server, check: 'bytes' as const }],
    )
    const lists = [
      pageOfBooks(1),
      pageOfBooks(COMPARED_PAGES),
      pageOfBooks(SEED.books / 20 + 1),
      '/api/v1/books?author_id=1',
      `/api/v1/books?author_id=${SEED.authors}`,
      `/api/v1/books?author_id=${SEED.authors + 1}`,
      '/api/v1/books',
    ]
    await compareReads(service, bytes, SEED, lists)
    if (others.express) {
      await compareReads(service, [{ server: others.express, check: 'records' }], SEED, [
        pageOfBooks(1),
        pageOfBooks(COMPARED_PAGES),
        '/api/v1/books?author_id=1',
        '/api/v1/books',
      ])
    }
    process.stderr.write(
      'reads: the raw reference (lists streamed and whole) and Elysia answer byte for byte as the service does, Express with the same statuses and record counts; measuring\n',
    )
    for (const server of [service, reference, ...Object.values(others)]) await warmUp(server)
    const results: ScenarioResult[] = []
    for (const scenario of readScenarios) {
      results.push(await runScenario(scenario, service, reference, measureMs, others))
    }
    return { results, loggedLines: service.loggedLines() }
  } finally {
    await stopComparison(servers)
  }
}
