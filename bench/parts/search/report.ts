/**
 * The search bench's report (bench/parts/search/search.ts): per backend and size the worst page of
 * the family ranked and sorted with its query, the spread and the pages over budget; the worst by
 * kind of query; four of the worst at once beside a fifth client; typo recall; the reference
 * beside the service; the loads; and the family itself, so that a run can be read and repeated.
 */
import { markdownTable } from '../../harness/tables'
import { ms } from '../million/report'
import { CROWD } from './concurrency'
import { KIND_NOTES, QUERY_KINDS } from './family'
import { PAGE_LIMIT_MS, type PageSummary, percentile, summarize } from './pages'
import {
  BUDGET_MS,
  budgetOf,
  code,
  count,
  figure,
  NAMES,
  pageName,
  ranked,
  type SearchCell,
  type SearchResult,
  sorted,
  where,
} from './report-format'
import { familyLines, targets } from './report-targets'

function spreadRows(cell: SearchCell): string[][] {
  const budget = budgetOf(cell.books)
  return (
    [
      ['ranked', summarize(ranked(cell.service), budget)],
      ['sorted', summarize(sorted(cell.service), budget)],
    ] as const
  ).map(([order, s]: readonly [string, PageSummary]) => [
    NAMES[cell.backend],
    count(cell.books),
    order,
    s.worst ? pageName(s.worst) : '—',
    s.worst ? figure(s.worst) : '—',
    ms(s.p50),
    ms(s.p90),
    ms(s.p99),
    `${s.overBudget} of ${s.pages} (> ${budget} ms)${s.failed > 0 ? `, ${s.failed} unanswered or not 200` : ''}`,
    String(s.once),
  ])
}

/** One line for the run's progress: the worst pages of a cell as soon as it is measured. */
export function cellLine(cell: SearchCell): string {
  const budget = budgetOf(cell.books)
  return (
    [
      ['ranked', ranked],
      ['sorted', sorted],
    ] as const
  )
    .map(([order, of]) => {
      const s = summarize(of(cell.service), budget)
      return `${order} worst ${s.worst ? `${figure(s.worst)} ms ${pageName(s.worst)}` : '—'}, p90 ${ms(s.p90)}, ${s.overBudget}/${s.pages} over`
    })
    .join('; ')
}

function kindTable(cells: readonly SearchCell[]): string {
  const rows = QUERY_KINDS.map((kind) => [
    `${kind}: ${KIND_NOTES[kind]}`,
    ...cells.map((cell) => {
      const of = cell.service.filter((t) => t.page.query.kind === kind)
      if (of.length === 0) return '—'
      const s = summarize(of, budgetOf(cell.books))
      return `${ms(s.worst?.medianMs ?? 0)} (${s.overBudget}/${s.pages})`
    }),
  ])
  return markdownTable(['kind of query: worst page ms (pages over budget / pages)', ...cells.map(where)], rows)
}

function crowdTable(cells: readonly SearchCell[]): string {
  const rows = cells.flatMap((cell) => {
    const round = cell.crowd
    if (round === undefined) return []
    const budget = budgetOf(cell.books)
    const among = round.others.map((o) => o.ms)
    const alone = round.others.map((o) => o.timing.medianMs)
    const worst = round.others.reduce<(typeof round.others)[number] | undefined>(
      (w, o) => (w === undefined || o.ms > w.ms ? o : w),
      undefined,
    )
    const failed = round.others.filter((o) => o.status !== 200).length + round.crowdFailed
    return [
      [
        where(cell),
        `${pageName(round.heavy)} ${figure(round.heavy)}`,
        `${round.crowdAnswers}, ${ms(round.crowdMedianMs)}`,
        String(round.others.length),
        worst ? `${ms(worst.ms)} ${pageName(worst.timing)}` : '—',
        ms(percentile(among, 0.9)),
        `${among.filter((m) => m > budget).length} (> ${budget} ms)${failed > 0 ? `, ${failed} not 200` : ''}`,
        `${ms(Math.max(...alone))} / ${ms(percentile(alone, 0.9))}`,
      ],
    ]
  })
  return markdownTable(
    [
      'backend, books',
      `the page ${CROWD} clients ask at once (ms alone)`,
      'their answers, median ms',
      'fifth client: pages',
      'its worst ms',
      'its p90 ms',
      'over budget',
      'the same pages alone: worst / p90 ms',
    ],
    rows,
  )
}

function recallTable(cells: readonly SearchCell[]): string {
  const rows = cells.map((cell) => {
    const { asked, found, typedRule, matchedAnything, failed } = cell.recall
    return [
      where(cell),
      `${found[1]} / ${asked[1]}`,
      `${found[2]} / ${asked[2]}`,
      `${typedRule.found} / ${typedRule.asked}`,
      `${matchedAnything} / ${asked[1] + asked[2]}${failed > 0 ? ` (${failed} answers not 200)` : ''}`,
    ]
  })
  const table = markdownTable(
    [
      'backend, books',
      'one edit: book found / asked',
      'two edits: found / asked',
      'those whose typed length allows their edits: found / asked',
      'misspelling matched any book',
    ],
    rows,
  )
  const missed = cells
    .filter((cell) => cell.recall.missed.length > 0)
    .map(
      (cell) =>
        `${where(cell)}: ${cell.recall.missed.map((m) => `${code(m.wrong)} (${code(m.right)}, ${m.matched})`).join(', ')}`,
    )
  return missed.length === 0
    ? table
    : `${table}\n\nNot found (in brackets the right word, and how many of the book's author's books the misspelling matched): ${missed.join('; ')}.`
}

/** Pages whose totals (meta.total, counted to 10,000) agree between service and reference: the same matches. */
function sameTotals(cell: SearchCell): string {
  const reference = new Map(cell.reference.map((t) => [t.page.key, t.total]))
  const asked = ranked(cell.service)
  const same = asked.filter((t) => t.total !== undefined && t.total === reference.get(t.page.key)).length
  return `${same} / ${asked.length}`
}

function referenceRows(cell: SearchCell): string[][] {
  const budget = budgetOf(cell.books)
  return (
    [
      ['ranked', ranked],
      ['sorted', sorted],
    ] as const
  ).map(([order, of]) => {
    const service = summarize(of(cell.service), budget)
    const reference = summarize(of(cell.reference), budget)
    const ratio = (a: number | undefined, b: number | undefined) =>
      a === undefined || b === undefined || b === 0 ? '—' : (a / b).toFixed(2)
    return [
      where(cell),
      order,
      service.worst ? ms(service.worst.medianMs) : '—',
      reference.worst ? `${figure(reference.worst)} ${pageName(reference.worst)}` : '—',
      ratio(service.worst?.medianMs, reference.worst?.medianMs),
      ms(service.p90),
      ms(reference.p90),
      ratio(service.p90, reference.p90),
      `${reference.overBudget} of ${reference.pages}`,
      order === 'ranked' ? sameTotals(cell) : '',
    ]
  })
}

function loadTable(cells: readonly SearchCell[]): string {
  const rows = cells.map((cell) => {
    const tenth = cells.find((c) => c.backend === cell.backend && c.books === cell.books / 10)
    const growth = tenth ? `${(cell.importRun.seconds / tenth.importRun.seconds).toFixed(1)}x` : '—'
    return [
      where(cell),
      `${count(cell.catalogue.authors)} / ${count(cell.catalogue.collections)} / ${count(cell.catalogue.titleWords)}`,
      cell.importRun.seconds.toFixed(1),
      growth,
      String(Math.round(cell.importRun.peakRssBytes / 2 ** 20)),
      cell.vacuumSeconds === undefined ? '—' : cell.vacuumSeconds.toFixed(1),
      cell.referenceSeconds.toFixed(1),
      `${cell.restarts.service} / ${cell.restarts.reference}`,
      `${cell.load.start.toFixed(1)} / ${cell.load.end.toFixed(1)}`,
      String(Math.round(cell.seconds)),
    ]
  })
  return markdownTable(
    [
      'backend, books',
      'authors / series / distinct title words',
      '`catalogue import` s',
      'import growth (x the tenth)',
      'import peak RSS MiB',
      'VACUUM ANALYZE s',
      'reference index s',
      'restarts after no answer (service / reference)',
      'load average at start / end',
      'this size took s',
    ],
    rows,
  )
}

export function searchSection(result: SearchResult): string {
  const cells = result.cells
  return [
    '### Search as people use it: a generated query family (issue 34)',
    '',
    `Catalogues generated with a seed (bench/parts/search/catalogue.ts: words of 1 to 16 letters drawn with Zipf's frequencies, titles of 1 to 12 words, some with a number, first and last names, a third of the books in a series), imported by \`catalogue import --create\` into a fresh SQLite file or temporary PostgreSQL database. From each loaded catalogue's own words, a family of queries drawn with seed ${result.seed} (\`--seed ${result.seed}\` repeats it): every query's first page of 20 ranked (no sort) and sorted (\`sort=name\`, \`sort=-name\`), asked of the real service (\`bun src/cli.ts serve\`, LOG_LEVEL=warn, pinned to core 0; PostgreSQL unpinned) one at a time by the bench on core 1, to the last body byte; ${result.passes} pass(es) over every page in seeded orders, taking turns with the reference; a page's figure is its median over the passes; the bench waits ${PAGE_LIMIT_MS / 1000} s at most for a page ("no answer" past it, or when the service closes the connection, and the server is then started afresh before the next page; a page over ${[...new Set(result.onceOverMs)].map((n) => ms(n)).join(' or ')} ms (4x the budget, at least 1 s) the first time was asked once: the "asked once" column); the worst is the worst page of the family. Budget: ${BUDGET_MS[100_000]} ms at 100,000 books, ${BUDGET_MS[1_000_000]} ms at 1,000,000. The build measured: ${result.build}. The whole run took ${Math.round(result.seconds)} s.`,
    '',
    markdownTable(
      [
        'backend',
        'books',
        'order',
        'worst page',
        'worst ms',
        'p50 ms',
        'p90 ms',
        'p99 ms',
        'pages over budget',
        'asked once',
      ],
      cells.flatMap(spreadRows),
    ),
    '',
    kindTable(cells),
    '',
    `Four of the worst at once: the family's worst page (by the passes) asked by ${CROWD} clients at once in a process of their own, each again as soon as answered, while a fifth client (the bench) asks ${result.crowdSample} other pages of the family (a seeded sample, other queries only) one at a time.`,
    '',
    crowdTable(cells),
    '',
    "Typo recall: each misspelled query was made from a word of a book's title (one edit in 5-8 letters, two in 9+, never the first letter, never a prefix of the right word); found means the search for the misspelling, filtered by the book's author and walked by numbered pages, holds that book.",
    '',
    recallTable(cells),
    '',
    "The reference (bench/parts/search/reference.ts), in the same run on the same catalogue and pages: plain Bun.serve over an index of its own (reference-index.ts): SQLite FTS5 over title, author name and series name (the service's tokenizer, prefix indexes of 1-3 letters, bm25 weighted 10/2/1), or PostgreSQL over one `simple` tsvector of the three weighted A/B/C under a GIN index (ts_rank); the total counted to 10,001 as the service does. Its ranking is not the service's, and it matches every word as a prefix, typos unforgiven: the last column counts the ranked pages with the same `meta.total` (where the service also forgives a typo it has more).",
    '',
    markdownTable(
      [
        'backend, books',
        'order',
        'service worst ms',
        'reference worst ms (page)',
        'service / reference worst',
        'service p90',
        'reference p90',
        'service / reference p90',
        'reference pages over budget',
        'same total',
      ],
      cells.flatMap(referenceRows),
    ),
    '',
    loadTable(cells),
    '',
    '```',
    targets(result),
    '```',
    '',
    ...familyLines(result),
  ].join('\n')
}
