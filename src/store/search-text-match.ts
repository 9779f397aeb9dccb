import type { Id } from '../model/record'
import { foldWord, type TextWord } from '../model/typos'
import { type RankedField, type SearchTerm, type WordMatch, wordMatch } from './search-terms'

/**
 * A search's words tested against a record's text here, by the rules the indexes match by
 * (src/model/typos.ts: words folded alike, a prefix or a forgiven whole word): where reading the
 * text is cheaper than asking the index again, as the SQLite store does for the hits of its
 * ranking and for a sorted walk (src/store/sqlite/search-reads.ts).
 */

/**
 * A word match folded, tested against many texts: the words that begin with `prefix` (null:
 * none), and the `whole` words (the word as written, when not a prefix, and its forgiven forms).
 */
export interface FoldedMatch {
  readonly prefix: string | null
  readonly whole: ReadonlySet<string>
}

export function foldedMatch(match: WordMatch): FoldedMatch {
  const written = match.written === null ? null : foldWord(match.written)
  const whole = new Set(match.whole)
  if (written !== null && !match.prefix) whole.add(written)
  return { prefix: match.prefix ? written : null, whole }
}

/** Whether a word match holds among a text's words: one begins with its prefix, or is one of its whole words. */
export function holds(match: FoldedMatch, words: readonly TextWord[]): boolean {
  const { prefix, whole } = match
  return words.some((w) => (prefix !== null && w.folded.startsWith(prefix)) || whole.has(w.folded))
}

/** Whether related ids are every record of a required relationship's target (the field then always holds). */
export type WholeTest = (field: number, ids: readonly Id[]) => boolean

/**
 * A term as a test of a record: its references (in the order of `refs`) and its texts' words (in
 * the order of `texts`) match it in some field. Null when every record passes (a related field
 * whose matches are every record its relationship can point at).
 */
export function termTest(
  term: SearchTerm,
  fields: readonly RankedField[],
  refs: readonly (readonly [number, string])[],
  texts: readonly (readonly [number, string])[],
  whole: WholeTest,
): ((references: readonly (Id | null)[], words: readonly (readonly TextWord[])[]) => boolean) | null {
  const sets: Set<Id>[] = []
  for (const [f] of refs) {
    const ids = term.related[f] ?? []
    if (ids.length > 0 && whole(f, ids)) return null
    sets.push(new Set(ids))
  }
  const matches = texts.map(([f]) => foldedMatch(wordMatch(term, fields[f] as RankedField)))
  return (references, words) =>
    sets.some((ids, i) => {
      const ref = references[i]
      return ref != null && ids.has(ref)
    }) || matches.some((match, i) => holds(match, words[i] ?? []))
}
