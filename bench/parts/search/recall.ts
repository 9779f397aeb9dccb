/**
 * Typo recall: for each misspelled query of the family, made from a right word of book B's title,
 * whether the service's search for the misspelling finds B. Asked as the misspelling filtered by
 * B's author (`filter[search]=<wrong>&filter[author]=<B's author>`), walked by cursor pages of 100,
 * which keep to id order, until B or a book after it shows up: exact, however many of the author's
 * books match.
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

interface CursorPage {
  data?: { id: string }[]
  meta?: { total?: number }
  links?: { next?: string }
}

/** Most cursor pages walked for one query: an author with more matching books than this is rare. */
const MOST_PAGES = 50

/**
 * Whether the author-filtered search for `wrong` holds the book, and how many of the author's books
 * it matched; undefined for an answer other than 200. Cursor pages keep to id order, so the walk
 * stops at a page that ends past the book (checked, not assumed: an unordered page walks on).
 */
async function findsBook(
  origin: string,
  wrong: string,
  bookId: number,
  authorId: number,
): Promise<{ found: boolean; matched: number } | undefined> {
  let path: string | undefined =
    `/api/v1/books?filter[search]=${encodeURIComponent(wrong)}&filter[author]=${authorId}&page[size]=100&page[after]=`
  let matched = 0
  for (let n = 0; path !== undefined && n < MOST_PAGES; n++) {
    const answer = await ask(origin, path)
    if (answer.status !== 200) return undefined
    const page = JSON.parse(answer.body) as CursorPage
    if (n === 0) matched = page.meta?.total ?? 0
    const ids = (page.data ?? []).map((book) => Number(book.id))
    if (ids.includes(bookId)) return { found: true, matched }
    const ascending = ids.every((id, i) => i === 0 || id > (ids[i - 1] ?? 0))
    if (ascending && (ids.at(-1) ?? 0) > bookId) return { found: false, matched }
    const next = page.links?.next
    path = next === undefined ? undefined : new URL(next, origin).pathname + new URL(next, origin).search
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
    else if (((JSON.parse(any.body) as CursorPage).meta?.total ?? 0) > 0) matchedAnything++
  }
  return { asked, found, typedRule, matchedAnything, failed, missed }
}
