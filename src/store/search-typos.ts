import type { TypoRule } from '../model/description'

/**
 * Typos a search forgives (docs/search.md), the same on both backends: a word of the search from
 * `oneFrom` letters may be one edit off a whole word of the catalogue, from `twoFrom` letters two,
 * the first letter always right. Candidates come from the type's vocabulary (`<table>_words`: every
 * word its searched attributes hold, by first letter and length), read in the search's snapshot,
 * so a word written is forgiven from the next search on, on every instance.
 */
export const DEFAULT_TYPO_RULE: TypoRule = { oneFrom: 5, twoFrom: 9 }

/** The most edits any rule forgives: ranking gives each level its own tier. */
export const MAX_TYPOS = 2

/** The vocabulary table of a searched type's table. */
export function vocabularyTable(table: string): string {
  return `${table}_words`
}

/** A word as the vocabulary holds it: accents removed, lower-cased (as the indexes fold it). */
export function foldWord(word: string): string {
  return word
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
}

/** The distinct folded words of a text, as the search indexes split it (runs of letters and digits). */
export function vocabularyWords(text: string): string[] {
  return [...new Set(foldWord(text.normalize('NFKC')).match(/[\p{L}\p{N}]+/gu) ?? [])]
}

/** A vocabulary row: the word's first character and its length in characters, then the word. */
export function vocabularyRow(word: string): [head: string, size: number, word: string] {
  const chars = [...word]
  return [chars[0] ?? '', chars.length, word]
}

/** How many edits a word of a search may be forgiven under a rule (by its folded length); a number none. */
export function typoBudget(word: string, rule: TypoRule): number {
  if (/^[0-9]+$/.test(word)) return 0
  const size = [...foldWord(word)].length
  return size >= rule.twoFrom ? 2 : size >= rule.oneFrom ? 1 : 0
}

/** Where a word's candidates lie in the vocabulary: same first character, length within the budget. */
export interface NearRange {
  readonly head: string
  readonly min: number
  readonly max: number
}

export function nearRange(word: string, budget: number): NearRange {
  const [head, size] = vocabularyRow(foldWord(word))
  return { head, min: Math.max(1, size - budget), max: size + budget }
}

/**
 * The optimal string alignment distance of two words (Damerau-Levenshtein where no letter is
 * edited twice: a change, a deletion, an insertion or a swap of neighbours is one edit), or
 * `max + 1` once it is sure to exceed `max`. Cost: length × length, on words of the vocabulary.
 */
export function editDistance(a: readonly string[], b: readonly string[], max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1
  let before = new Array<number>(b.length + 1).fill(0)
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = new Array<number>(b.length + 1).fill(0)
    current[0] = i
    let best = i
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, (previous[j - 1] as number) + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, (before[j - 2] as number) + 1)
      current[j] = d
      if (d < best) best = d
    }
    if (best > max) return max + 1
    before = previous
    previous = current
  }
  return Math.min(previous[b.length] as number, max + 1)
}

/**
 * The whole words of `candidates` a word is forgiven as, by edits: `[one edit, two edits]`. A
 * candidate that begins with the word is left out: the word matches it as a prefix, unforgiven.
 */
export function forgivenWords(word: string, candidates: readonly string[], budget: number): string[][] {
  const found: string[][] = Array.from({ length: MAX_TYPOS }, () => [])
  if (budget === 0) return found
  const folded = foldWord(word)
  const chars = [...folded]
  for (const candidate of candidates) {
    if (candidate.startsWith(folded)) continue
    const other = [...candidate]
    if (other[0] !== chars[0]) continue
    const distance = editDistance(chars, other, budget)
    if (distance >= 1 && distance <= budget) found[distance - 1]?.push(candidate)
  }
  return found
}
