import type { TypoRule } from './description'

/**
 * The typos a search forgives (docs/search.md), the same on both backends and in the matches a
 * page shows: a word of the search from `oneFrom` letters may be one edit off a whole word, from
 * `twoFrom` letters two, the first letter always right; a number is taken as written.
 */
export const DEFAULT_TYPO_RULE: TypoRule = { oneFrom: 5, twoFrom: 9 }

/** The most edits any rule forgives: ranking gives each level its own tier. */
export const MAX_TYPOS = 2

/** A word as the indexes fold it: accents removed, lower-cased (as the indexes fold it). */
export function foldWord(word: string): string {
  return word
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
}

/** How many edits a word of a search may be forgiven under a rule (by its folded length); a number none. */
export function typoBudget(word: string, rule: TypoRule): number {
  if (/^[0-9]+$/.test(word)) return 0
  const size = [...foldWord(word)].length
  return size >= rule.twoFrom ? 2 : size >= rule.oneFrom ? 1 : 0
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
 * How many edits a word of a search needs to be `word` (a whole word of a text, folded): 0 when it
 * is the word, or begins it where the search word is a prefix; 1 or 2 when forgiven; null when it
 * does not match.
 */
export function typosTo(searched: string, word: string, budget: number, prefix: boolean): number | null {
  const folded = foldWord(searched)
  if (prefix ? word.startsWith(folded) : word === folded) return 0
  if (budget === 0) return null
  const chars = [...folded]
  const other = [...word]
  if (other[0] !== chars[0]) return null
  const distance = editDistance(chars, other, budget)
  return distance <= budget ? distance : null
}

/** A word of a text: where it stands (UTF-16 offsets, as JavaScript indexes strings) and its folded form. */
export interface TextWord {
  readonly start: number
  readonly end: number
  readonly folded: string
}

/** The words of a text as the search indexes split it: runs of letters and digits. */
export function textWords(text: string): TextWord[] {
  return [...text.matchAll(/[\p{L}\p{N}]+/gu)].map((m) => ({
    start: m.index,
    end: m.index + m[0].length,
    folded: foldWord(m[0].normalize('NFKC')),
  }))
}
