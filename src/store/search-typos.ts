import { editDistance, foldWord, MAX_TYPOS } from '../model/typos'

/**
 * Typos a search forgives (docs/search.md), the same on both backends: a word of the search from
 * `oneFrom` letters may be one edit off a whole word of the catalogue, from `twoFrom` letters two,
 * the first letter always right. Candidates come from the type's vocabulary (`<table>_words`: every
 * word its searched attributes hold, by first letter and length), read in the search's snapshot,
 * so a word written is forgiven from the next search on, on every instance.
 */

/** The vocabulary table of a searched type's table. */
export function vocabularyTable(table: string): string {
  return `${table}_words`
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
 * The whole words of `candidates` a word is forgiven as, by edits: `[one edit, two edits]`. A word
 * matched as a prefix leaves out the candidates it begins: it matches them unforgiven.
 */
export function forgivenWords(
  word: string,
  candidates: readonly string[],
  budget: number,
  prefix: boolean,
): string[][] {
  const found: string[][] = Array.from({ length: MAX_TYPOS }, () => [])
  if (budget === 0) return found
  const folded = foldWord(word)
  const chars = [...folded]
  for (const candidate of candidates) {
    if (prefix && candidate.startsWith(folded)) continue
    const other = [...candidate]
    if (other[0] !== chars[0]) continue
    const distance = editDistance(chars, other, budget)
    if (distance >= 1 && distance <= budget) found[distance - 1]?.push(candidate)
  }
  return found
}
