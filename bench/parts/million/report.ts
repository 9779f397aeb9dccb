/**
 * The million-book part's section of the report (bench/parts/million/million.ts): per backend, a table of each
 * request's median and spread at each size with the growth from one size to the next, the imports,
 * and issue 24's targets as PASS/MISS lines.
 */

import { markdownTable } from '../../harness/tables'
import { type CaseTiming, MILLION_CASES, MILLION_SAMPLES, type MillionCell, type MillionResult } from './cases'
import { BACKEND_NAMES, type MillionBackend, type MillionSize, millionDataDir } from './data'

/** Search pages within this many ms at 100,000 books, and at 1,000,000. */
export const SEARCH_TARGET_MS: Readonly<Record<number, number>> = { 100000: 50, 1000000: 250 }
/** The plain page at 1,000,000 books "about the same" as at 10,000: at most this multiple. */
export const PLAIN_PAGE_MULTIPLE = 2
/** `catalogue import` of 1,000,000 books at most this multiple of 100,000's time... */
export const IMPORT_MULTIPLE = 12
/** ...and its peak RSS ("memory flat") at most this multiple of 100,000's. */
export const IMPORT_MEMORY_MULTIPLE = 1.5

const count = (n: number) => n.toLocaleString('en-US')
const short = (books: number) => (books >= 1_000_000 ? `${books / 1_000_000}M` : `${books / 1000}k`)

export function ms(value: number): string {
  if (value < 10) return value.toFixed(2)
  if (value < 100) return value.toFixed(1)
  return Math.round(value).toLocaleString('en-US')
}

function timingCell(timing: CaseTiming | undefined): string {
  if (timing === undefined) return '—'
  const answered = timing.status === 200 ? '' : timing.status === 0 ? ' (failed)' : ` (answered ${timing.status})`
  return `${ms(timing.medianMs)} (${ms(timing.minMs)}-${ms(timing.maxMs)})${answered}`
}

const ratio = (later: number | undefined, earlier: number | undefined) =>
  later === undefined || earlier === undefined || earlier === 0 ? '—' : `${(later / earlier).toFixed(1)}x`

function cellOf(result: MillionResult, backend: MillionBackend, books: number): MillionCell | undefined {
  return result.cells.find((cell) => cell.backend === backend && cell.size.books === books)
}

/** The growth columns: each size over the one before it, for consecutive sizes measured. */
function growthHeaders(sizes: readonly MillionSize[]): string[] {
  return sizes.slice(1).map((size, i) => `${short(size.books)}/${short(sizes[i]?.books ?? 0)}`)
}

function backendTable(result: MillionResult, backend: MillionBackend): string {
  const cells = result.sizes.map((size) => cellOf(result, backend, size.books))
  const growth = (values: (number | undefined)[]) => values.slice(1).map((value, i) => ratio(value, values[i]))
  const rows = MILLION_CASES.map((c) => {
    const timings = cells.map((cell) => cell?.timings.get(c.key))
    return [c.label, ...timings.map(timingCell), ...growth(timings.map((t) => t?.medianMs))]
  })
  const imports = cells.map((cell) => cell?.importRun)
  rows.push(
    [
      '`catalogue import` of the CSV into a fresh database (s)',
      ...imports.map((run) => (run === undefined ? '—' : run.seconds.toFixed(1))),
      ...growth(imports.map((run) => run?.seconds)),
    ],
    [
      'its peak RSS (MiB)',
      ...imports.map((run) => (run === undefined ? '—' : Math.round(run.peakRssBytes / 2 ** 20).toString())),
      ...growth(imports.map((run) => run?.peakRssBytes)),
    ],
  )
  return markdownTable(
    [
      `${BACKEND_NAMES[backend]}: request, ms median (min-max)`,
      ...result.sizes.map((size) => `${count(size.books)} books`),
      ...growthHeaders(result.sizes),
    ],
    rows,
  )
}

/** How many books the searches matched (meta.total), for reading the growth. */
function matchesLine(result: MillionResult, backend: MillionBackend): string {
  const searches = MILLION_CASES.filter((c) => c.kind === 'ranked')
  const parts = searches.map((c) => {
    const totals = result.sizes.map((size) => cellOf(result, backend, size.books)?.timings.get(c.key)?.total)
    return `\`${c.key.slice('ranked '.length)}\` ${totals.map((t) => (t === undefined ? '—' : count(t))).join(' / ')}`
  })
  return `Books matched (meta.total) at ${result.sizes.map((s) => short(s.books)).join(' / ')}: ${parts.join('; ')}.`
}

/** Issue 24's targets over what was measured, a PASS/MISS line each; sizes not measured are left out. */
export function millionTargets(result: MillionResult): string {
  const lines = [
    `targets (issue 24): search pages (ranked and sorted, first page of 20) <= ${SEARCH_TARGET_MS[100_000]} ms at 100,000 books and <= ${SEARCH_TARGET_MS[1_000_000]} ms at 1,000,000;`,
    `  the plain numbered page at 1,000,000 books <= ${PLAIN_PAGE_MULTIPLE}x its time at 10,000; catalogue import of 1,000,000 books <= ${IMPORT_MULTIPLE}x the time of 100,000, peak RSS <= ${IMPORT_MEMORY_MULTIPLE}x`,
  ]
  const line = (ok: boolean, text: string) => lines.push(`  ${ok ? 'PASS' : 'MISS'}  ${text}`)
  for (const backend of result.backends) {
    const name = BACKEND_NAMES[backend]
    for (const [books, limit] of Object.entries(SEARCH_TARGET_MS).map(([b, l]) => [Number(b), l] as const)) {
      const cell = cellOf(result, backend, books)
      if (cell === undefined) continue
      for (const c of MILLION_CASES.filter((c) => c.kind === 'ranked' || c.kind === 'sorted')) {
        const timing = cell.timings.get(c.key)
        if (timing === undefined) continue
        const refused = timing.status === 200 ? '' : timing.status === 0 ? ', failed' : `, answered ${timing.status}`
        line(
          timing.status === 200 && timing.medianMs <= limit,
          `${ms(timing.medianMs)} ms (<= ${limit}${refused}) on ${name} at ${count(books)} books: ${c.label}`,
        )
      }
    }
    const small = cellOf(result, backend, 10_000)
    const large = cellOf(result, backend, 1_000_000)
    const plainSmall = small?.timings.get('plain page')
    const plainLarge = large?.timings.get('plain page')
    if (plainSmall && plainLarge) {
      const multiple = plainLarge.medianMs / plainSmall.medianMs
      line(
        multiple <= PLAIN_PAGE_MULTIPLE,
        `plain page ${ms(plainLarge.medianMs)} ms at 1,000,000 books against ${ms(plainSmall.medianMs)} ms at 10,000: ${multiple.toFixed(1)}x (<= ${PLAIN_PAGE_MULTIPLE}) on ${name}`,
      )
    }
    const tenth = cellOf(result, backend, 100_000)?.importRun
    const whole = large?.importRun
    if (tenth && whole) {
      const time = whole.seconds / tenth.seconds
      line(
        time <= IMPORT_MULTIPLE,
        `import of 1,000,000 books ${whole.seconds.toFixed(1)} s, ${time.toFixed(1)}x 100,000's ${tenth.seconds.toFixed(1)} s (<= ${IMPORT_MULTIPLE}) on ${name}`,
      )
      const memory = whole.peakRssBytes / tenth.peakRssBytes
      line(
        memory <= IMPORT_MEMORY_MULTIPLE,
        `import peak RSS ${Math.round(whole.peakRssBytes / 2 ** 20)} MiB at 1,000,000 books, ${memory.toFixed(2)}x 100,000's (<= ${IMPORT_MEMORY_MULTIPLE}) on ${name}`,
      )
    }
  }
  return lines.join('\n')
}

/** Which sets this run made (and how long the import took), for the section's first paragraph. */
function madeLine(result: MillionResult): string {
  const made = result.cells.filter((cell) => cell.importMadeSet)
  if (made.length === 0) return 'Every data set was kept from an earlier run.'
  const list = made.map(
    (cell) =>
      `${BACKEND_NAMES[cell.backend]} ${short(cell.size.books)} (import ${cell.importRun.seconds.toFixed(1)} s)`,
  )
  return `This run made ${list.join(', ')}; the import that made a set is the import figure of its size this run.`
}

export function millionSection(result: MillionResult): string {
  const names = result.sizes.map((size) => count(size.books))
  const sizes = names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1)}` : (names[0] ?? '')
  const { min, max, budgetMs } = MILLION_SAMPLES
  return [
    `### A million books: searches, pages and imports at ${sizes} books (issue 24)`,
    '',
    `Data sets in bench/data/import-data.ts's shape (1000 authors, 40 named collections, every fifth book in none; titles \`Book <n>\`, every 89th \`Livre n°<n> — édition\`), made once by \`catalogue import\` of its CSV and kept between runs (SQLite files and CSVs in BENCH_DATA_DIR, here ${millionDataDir}; PostgreSQL databases \`catalogue_bench_10k\`, \`_100k\`, \`_1m\`, vacuumed and analyzed after the import), re-made when bench/data/import-data.ts or the schema's migrations change otherwise than by new ones, migrated by \`catalogue migrate\` when this build only adds some. ${madeLine(result)} The whole part took ${Math.round(result.seconds)} s.`,
    '',
    `The service (\`bun src/cli.ts serve\`, LOG_LEVEL=warn, pinned to core 0; PostgreSQL's processes unpinned) on each set, one request at a time from the bench on core 1 over one keep-alive connection, from sending to the last body byte: one warm-up request, then ${min === max ? min : `${min} to ${max}`} of each (no more once ${budgetMs / 1000} s are spent); median and (min-max) in ms. Searches are \`filter[search]=...&page[size]=20\`, ranked (no \`sort\`) or sorted (\`sort=-name\`). The import is \`catalogue import --create\` of the set's CSV into a fresh scratch database (a file, or a new database), removed after, on every core; wall time from start to exit, and the command's peak RSS. The last columns are the growth from one size to the next (10x the books).`,
    '',
    ...result.backends.flatMap((backend) => [backendTable(result, backend), '', matchesLine(result, backend), '']),
    '```',
    millionTargets(result),
    '```',
  ].join('\n')
}
