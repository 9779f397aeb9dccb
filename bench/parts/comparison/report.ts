/** The comparison's tables and sections: the service beside the raw reference, Elysia and Express. */
import { SEED } from '../../data/seed'
import type { LoadSummary } from '../../harness/load'
import { measuredSeconds } from '../../harness/measure'
import type { BaselineName, ScenarioResult } from '../../harness/scenario'
import {
  CLIENT_BOUND_CORES,
  clientBound,
  cpu,
  label,
  markdownTable,
  over,
  p99Of,
  rateOf,
  ratio2,
} from '../../harness/tables'
import type { ReadsResult } from './reads'
import { DELETE_STOCK } from './scenarios'
import type { DurabilityResult } from './writes'

const count = (n: number) => n.toLocaleString('en-US')

/** The three baselines of issue 10, as the report names them. */
export const BASELINES_NOTE = [
  '- Raw reference ("raw"): bench/references/raw.ts, plain Bun.serve + the prepared bun:sqlite statements of bench/references/sqlite-handlers.ts, no framework, no logging, on a copy of the same file with the same pragmas and the same SQL, each write committed alone (one transaction per request); it has GET one book, POST, PATCH (a rename) and DELETE of a book, the unpaginated lists (every book, the books of an author), offset and cursor pages of books (with full-text search on offset pages) and an author with its books. In the comparison it streams the unpaginated lists in keyset batches of 1,000 rows, each written as one chunk (REFERENCE_LISTS=streamed), as the service does; a second process of it writing them whole ("raw, lists whole") is reported beside it for the lists, and for the writes a third committing them in groups as the service does ("raw, group commit", REFERENCE_COMMITS=grouped: the writes of one turn of the event loop in one IMMEDIATE transaction, each in a savepoint, answered after the COMMIT).',
  '- Minimal Elysia ("Elysia"): bench/references/elysia.ts, `new Elysia()` with plain .get/.post/.patch/.delete routes (no plugins, no schemas) calling the same handlers over the same statements; lists written whole.',
  '- Express ("Express"): bench/references/express.mjs, the conventional Node stack run as it is run: on Node 20, Express 5 with express.json and jsonapi-serializer\'s Serializer (the author and collection included for one book, linkage in lists), over better-sqlite3 with the same pragmas and SQL, each write committed alone.',
  "- Checks before measuring: the raw reference (both list modes, both commit modes) and Elysia answer every compared request (reads; a create, renames, deletes) with the service's status, content type, Location and body bytes; Express's documents differ, so it is held to the same status, Location and number of records (data and included).",
]

/**
 * Issue 10's comparison: for each scenario the service beside the raw reference (for the
 * unpaginated lists: streaming them, as the service does), the minimal Elysia app and Express +
 * jsonapi-serializer, and for the lists also the raw reference writing them whole.
 */
export function comparisonTable(results: readonly ScenarioResult[]): string {
  const withWhole = results.some((r) => r.baselines?.whole !== undefined)
  const withGrouped = results.some((r) => r.baselines?.grouped !== undefined)
  const header = [
    'scenario',
    'service req/s',
    'raw req/s',
    'ratio to raw',
    'Elysia req/s',
    'ratio to Elysia',
    'Express req/s',
    'multiple of Express',
    'service p99 (ms)',
    'raw p99 (ms)',
    ...(withWhole ? ['raw, lists whole: req/s', 'ratio to it'] : []),
    ...(withGrouped ? ['raw, group commit: req/s', 'ratio to it', 'its multiple of Express'] : []),
  ]
  const rows = results.map((result) => {
    const { service, reference, baselines = {} } = result
    const other = (name: BaselineName) => baselines[name]?.load
    const rateOrDash = (load: LoadSummary | undefined) => (load === undefined ? '—' : rateOf(load))
    return [
      label(result),
      rateOf(service),
      rateOrDash(reference),
      ratio2(over(service, reference)),
      rateOrDash(other('elysia')),
      ratio2(over(service, other('elysia'))),
      rateOrDash(other('express')),
      ratio2(over(service, other('express'))),
      p99Of(service),
      reference ? p99Of(reference) : '—',
      ...(withWhole ? [rateOrDash(other('whole')), ratio2(over(service, other('whole')))] : []),
      ...(withGrouped ? groupedColumns(service, other('grouped'), other('express')) : []),
    ]
  })
  const notes = [
    '"raw" is bench/references/raw.ts (plain Bun.serve, the same prepared statements and bytes); for the unpaginated lists it streams them in batches of 1,000 (REFERENCE_LISTS=streamed), as the service does, and "raw, lists whole" is the same server reading and writing each list in one piece. For the writes, "raw, group commit" is the same server committing them as the service does (REFERENCE_COMMITS=grouped: the writes of one turn of the event loop in one transaction, each in a savepoint, answered after the COMMIT): what the same SQL costs in a plain Bun.serve that batches as the service does; its multiple of Express is what such a server, with no framework, no logging and no checks beyond that SQL, reaches. "Elysia" is bench/references/elysia.ts, the same handlers behind plain Elysia routes; "Express" is bench/references/express.mjs, Express 5 + jsonapi-serializer on Node 20 over better-sqlite3 with the same SQL (its documents differ: checked for status and record counts only).',
  ]
  const loads = results.flatMap((r) => [
    r.service,
    ...(r.reference ? [r.reference] : []),
    ...Object.values(r.baselines ?? {}).map((m) => m.load),
  ])
  if (loads.some(clientBound)) {
    notes.push(
      `\\* The load generator was at least ${CLIENT_BOUND_CORES} of its core busy: it, not the server, set this rate (a baseline held back this way makes the ratio flatter the service). The CPU table compares what each server itself spends per request.`,
    )
  }
  return `${markdownTable(header, rows)}\n\n${notes.join('\n\n')}`
}

/** The raw reference committing in groups: its rate, the service's ratio to it, its own multiple of Express. */
function groupedColumns(
  service: LoadSummary,
  grouped: LoadSummary | undefined,
  express: LoadSummary | undefined,
): string[] {
  if (grouped === undefined) return ['—', '—', '—']
  return [rateOf(grouped), ratio2(over(service, grouped)), ratio2(over(grouped, express))]
}

/** The comparison's CPU per request, each server's process tree. */
export function comparisonCpuTable(results: readonly ScenarioResult[]): string {
  const withWhole = results.some((r) => r.baselines?.whole !== undefined)
  const withGrouped = results.some((r) => r.baselines?.grouped !== undefined)
  const header = [
    'scenario',
    'service CPU µs/req',
    'raw CPU µs/req',
    'Elysia CPU µs/req',
    'Express CPU µs/req',
    ...(withWhole ? ['raw, lists whole: CPU µs/req'] : []),
    ...(withGrouped ? ['raw, group commit: CPU µs/req'] : []),
    'load generator cores busy (service / raw)',
  ]
  const rows = results.map((result) => {
    const of = (name: BaselineName) => cpu(result.baselines?.[name]?.cpuUs)
    return [
      label(result),
      cpu(result.serviceCpuUs),
      cpu(result.referenceCpuUs),
      of('elysia'),
      of('express'),
      ...(withWhole ? [of('whole')] : []),
      ...(withGrouped ? [of('grouped')] : []),
      [result.service, result.reference].map((r) => (r ? r.clientCores.toFixed(2) : '—')).join(' / '),
    ]
  })
  return markdownTable(header, rows)
}

const secondsOf = (measureMs: number) => `${measuredSeconds(measureMs)} s per scenario and server`

/** The reads of the comparison, as a section of the report. */
export function readsSection(reads: ReadsResult, measureMs: number): string {
  return [
    `### At ${count(SEED.books)} books: reads beside three baselines (${secondsOf(measureMs)})`,
    '',
    'Each server on its own copy of the seeded file, all started together and pinned to core 0, measured in turn.',
    '',
    comparisonTable(reads.results),
    '',
    'Server CPU time (user + system) per request, warm-up included:',
    '',
    comparisonCpuTable(reads.results),
  ].join('\n')
}

/** The writes at each DURABILITY, as a section of the report. */
export function durabilitySection(runs: readonly DurabilityResult[], measureMs: number): string {
  const results = runs.flatMap((run) => run.results)
  return [
    `### Writes at each DURABILITY beside three baselines (${secondsOf(measureMs)})`,
    '',
    `The service started with \`DURABILITY=full\`, then \`normal\`, each beside the raw reference, Elysia and Express at the same setting (synchronous=FULL, then NORMAL, in WAL; REFERENCE_DURABILITY), which commit each write alone, and the raw reference again committing them in groups as the service does; fresh copies of the write runs' file for each (the ${count(SEED.books)} books and ${count(DELETE_STOCK)} more that DELETE deletes, a different one each request, ids ${count(SEED.books + 1)} on). PATCH renames one of the ${count(SEED.books)} books, drawn at random.`,
    '',
    comparisonTable(results),
    '',
    'Server CPU time (user + system) per request, warm-up included:',
    '',
    comparisonCpuTable(results),
  ].join('\n')
}
