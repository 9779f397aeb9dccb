/**
 * The end of the search bench's report (bench/parts/search/report.ts): issue 34's targets as
 * PASS/MISS lines, and the query family of each size, so that a run can be read and repeated.
 */
import { ms } from '../million/report'
import { CROWD } from './concurrency'
import { QUERY_KINDS } from './family'
import { summarize } from './pages'
import {
  BUDGET_MS,
  budgetOf,
  code,
  count,
  figure,
  IMPORT_MULTIPLE,
  NAMES,
  pageName,
  ranked,
  type SearchResult,
  sorted,
  where,
} from './report-format'

export function targets(result: SearchResult): string {
  const lines = [
    `targets (issue 34): every page of the family <= ${BUDGET_MS[100_000]} ms at 100,000 books and <= ${BUDGET_MS[1_000_000]} ms at 1,000,000, ranked and sorted; the same for a fifth client beside ${CROWD} of the worst; every misspelling finds its book; SQLite's import of 1,000,000 <= ${IMPORT_MULTIPLE}x 100,000's`,
  ]
  const line = (ok: boolean, text: string) => lines.push(`  ${ok ? 'PASS' : 'MISS'}  ${text}`)
  for (const cell of result.cells) {
    const budget = budgetOf(cell.books)
    for (const [order, of] of [
      ['ranked', ranked],
      ['sorted', sorted],
    ] as const) {
      const s = summarize(of(cell.service), budget)
      const worst = s.worst ? `${figure(s.worst)} ms, ${pageName(s.worst)}` : 'no page'
      line(
        s.overBudget === 0 && s.failed === 0,
        `${where(cell)} ${order}: worst ${worst}; ${s.overBudget} of ${s.pages} over`,
      )
    }
    if (cell.crowd) {
      const worst = Math.max(...cell.crowd.others.map((o) => o.ms))
      line(worst <= budget, `${where(cell)} beside ${CROWD} of the worst: the fifth client's worst ${ms(worst)} ms`)
    }
    const { asked, found } = cell.recall
    const all = asked[1] + asked[2]
    line(found[1] + found[2] === all, `${where(cell)} typo recall ${found[1] + found[2]} / ${all}`)
  }
  for (const cell of result.cells.filter((c) => c.backend === 'sqlite' && c.books === 1_000_000)) {
    const tenth = result.cells.find((c) => c.backend === 'sqlite' && c.books === 100_000)
    if (!tenth) continue
    const growth = cell.importRun.seconds / tenth.importRun.seconds
    line(growth <= IMPORT_MULTIPLE, `SQLite import of 1,000,000 books ${growth.toFixed(1)}x 100,000's`)
  }
  return lines.join('\n')
}

export function familyLines(result: SearchResult): string[] {
  const seen = new Set<string>()
  return result.cells.flatMap((cell) => {
    if (seen.has(`${cell.books} ${cell.familyHash}`)) return []
    seen.add(`${cell.books} ${cell.familyHash}`)
    const on = result.cells
      .filter((c) => c.books === cell.books && c.familyHash === cell.familyHash)
      .map((c) => NAMES[c.backend])
    return [
      `The family at ${count(cell.books)} books (${on.join(' and ')}; ${cell.family.length} queries, fingerprint ${cell.familyHash}):`,
      '',
      ...QUERY_KINDS.map((kind) => {
        const texts = cell.family.filter((q) => q.kind === kind).map((q) => code(q.text))
        return `- ${kind}: ${texts.join(', ') || '—'}`
      }),
      '',
    ]
  })
}
