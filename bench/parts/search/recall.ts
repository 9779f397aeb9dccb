/**
 * Typo recall: for each misspelled query of the family, made from a right word of book B's title,
 * whether the service's search for the misspelling finds B. Asked as the misspelling filtered by
 * B's author (`filter[search]=<wrong>&filter[author]=<B's author>`), walked by numbered pages of
 * 100 (a search pages through its first 10,000 matches, more than a misspelling matches of one author's books here) until B
 * shows up or the pages end. Not by cursor pages: on PostgreSQL a search's cursor pages leave the
 * author filter aside (every match of the words, whoever wrote it), while its numbered pages and
 * its total keep it.
 */
import type { FamilyQuery } from './family'
import { ask } from './pages'
import { editsAllowed } from './typos'
import type { ServerUnderTest } from './under-test'

export interface RecallResult {
  /** Per number of edits (1, 2): asked and found. */
  readonly asked: Readonly<Record<1 | 2, number>>
  readonly found: Readonly<Record<1 | 2, number>>
  /**
   * The same, of the misspellings whose own length allows their edits (a right word of 9 letters
   * with a letter left out is typed in 8, where one edit is the rule if it is the typed word that counts).
   */
  readonly typedRule: { readonly asked: number; readonly found: number }
  /** Misspelled queries whose search (author filter aside) matched some book. */
  readonly matchedAnything: number
  /** Answers other than 200 along the way. */
  readonly failed: number
  /** The misspellings whose book was not found: their right word, and how many of its author's books they matched. */
  readonly missed: readonly { readonly wrong: string; readonly right: string; readonly matched: number }[]
}

interface ListPage {
  data?: { id: string }[]
  meta?: { total?: number }
  links?: { next?: string }
}

/** Numbered pages reach the first 10,000 matches of a search: 100 pages of 100. */
const MOST_PAGES = 100

/** Whether the author-filtered search for `wrong` holds the book, and how many of the author's books it matched; undefined for an answer other than 200. */
async function findsBook(
  origin: string,
  wrong: string,
  bookId: number,
  authorId: number,
): Promise<{ found: boolean; matched: number } | undefined> {
  const path = `/api/v1/books?filter[search]=${encodeURIComponent(wrong)}&filter[author]=${authorId}&page[size]=100`
  let matched = 0
  for (let n = 1; n <= MOST_PAGES; n++) {
    const answer = await ask(origin, `${path}&page[number]=${n}`)
    if (answer.status !== 200) return undefined
    const page = JSON.parse(answer.body) as ListPage
    if (n === 1) matched = page.meta?.total ?? 0
    if ((page.data ?? []).some((book) => Number(book.id) === bookId)) return { found: true, matched }
    if (page.links?.next === undefined) break
  }
  return { found: false, matched }
}

export async function typoRecall(server: ServerUnderTest, family: readonly FamilyQuery[]): Promise<RecallResult> {
  const { origin } = server
  const asked = { 1: 0, 2: 0 }
  const found = { 1: 0, 2: 0 }
  let matchedAnything = 0
  let failed = 0
  const missed: { wrong: string; right: string; matched: number }[] = []
  const typedRule = { asked: 0, found: 0 }
  for (const query of family) {
    if (query.typo === undefined) continue
    const edits = query.kind === 'two typos' ? 2 : 1
    asked[edits]++
    const hit = await findsBook(origin, query.text, query.typo.bookId, query.typo.authorId)
    if (hit === undefined) failed++
    else if (hit.found) found[edits]++
    else missed.push({ wrong: query.text, right: query.typo.right, matched: hit.matched })
    if (editsAllowed(query.text.length) >= edits) {
      typedRule.asked++
      if (hit?.found) typedRule.found++
    }
    const any = await ask(origin, `/api/v1/books?filter[search]=${encodeURIComponent(query.text)}&page[size]=1`)
    if (any.status !== 200) failed++
    else if (((JSON.parse(any.body) as ListPage).meta?.total ?? 0) > 0) matchedAnything++
  }
  return { asked, found, typedRule, matchedAnything, failed, missed }
}
