/**
 * Misspellings for the search bench's query family, by issue 34's rules: one edit in a word of 5 to
 * 8 letters, two in a word of 9 or more, an edit being a substitution, a deletion, an insertion or a
 * swap of neighbours (Damerau-Levenshtein, optimal string alignment), the first letter never touched.
 */
import { below, type Random } from './seeded-random'

const LETTERS = 'abcdefghijklmnopqrstuvwxyz'

/** Edits a word of `length` letters is allowed to be off by: 0 under 5 letters, 1 up to 8, 2 from 9. */
export function editsAllowed(length: number): number {
  return length >= 9 ? 2 : length >= 5 ? 1 : 0
}

/** Optimal string alignment distance: Levenshtein plus the swap of two neighbours as one edit. */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1
  const columns = b.length + 1
  const d = new Array<number>(rows * columns).fill(0)
  const at = (i: number, j: number) => d[i * columns + j] ?? 0
  for (let i = 0; i < rows; i++) d[i * columns] = i
  for (let j = 0; j < columns; j++) d[j] = j
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < columns; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, at(i - 2, j - 2) + 1)
      d[i * columns + j] = best
    }
  }
  return at(rows - 1, columns - 1)
}

/** A letter other than `not`. */
function otherLetter(random: Random, not: string | undefined): string {
  for (;;) {
    const letter = LETTERS[below(random, LETTERS.length)] ?? 'x'
    if (letter !== not) return letter
  }
}

/** One edit anywhere but the first letter. */
function edit(random: Random, word: string): string {
  const kind = below(random, 4)
  if (kind === 0) {
    const i = 1 + below(random, word.length - 1)
    return word.slice(0, i) + otherLetter(random, word[i]) + word.slice(i + 1)
  }
  if (kind === 1) {
    const i = 1 + below(random, word.length - 1)
    return word.slice(0, i) + word.slice(i + 1)
  }
  if (kind === 2) {
    const i = 1 + below(random, word.length)
    return word.slice(0, i) + otherLetter(random, undefined) + word.slice(i)
  }
  const i = 1 + below(random, word.length - 2)
  return word.slice(0, i) + (word[i + 1] ?? '') + (word[i] ?? '') + word.slice(i + 2)
}

/**
 * `right` (lower-case letters, 5 or more) misspelled by as many edits as it is allowed, or undefined
 * where none of a few tries gives one. A misspelling that is still a prefix of the right word (its
 * last letter dropped) is no test of typos, since today's prefix search finds it: it is not made.
 */
export function misspell(random: Random, right: string): string | undefined {
  const edits = editsAllowed(right.length)
  if (edits === 0 || !/^[a-z]+$/.test(right)) return undefined
  for (let attempt = 0; attempt < 20; attempt++) {
    let wrong = right
    for (let n = 0; n < edits; n++) wrong = edit(random, wrong)
    if (wrong[0] !== right[0] || right.startsWith(wrong)) continue
    if (editDistance(right, wrong) === edits) return wrong
  }
  return undefined
}
