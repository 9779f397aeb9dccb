/**
 * The words of a search box (docs/search.md): every word must match; the last one, which the
 * person may still be typing, matches the words it begins, and the words before it match whole
 * words, as Meilisearch and Typesense take them. A finished word read as a prefix widened a search
 * for nothing a person meant (`a e i o u k` matched every book with words beginning with each
 * letter: 1.8 s at 1,000,000 books) and made every earlier word as costly as a prefix.
 */

/** A word of a search, lower-cased: a whole word, or (the last one) a prefix. */
export interface SearchWord {
  readonly text: string
  readonly prefix: boolean
}

/** The words of a search as the indexes split a text: runs of letters and digits, after NFKC. */
export function searchWords(text: string): string[] {
  return text.normalize('NFKC').match(/[\p{L}\p{N}]+/gu) ?? []
}

/**
 * The words that narrow a search, in the order given: the last a prefix, the others whole. A whole
 * word repeated adds nothing and is kept once. The prefix is dropped where a whole word of the
 * search begins with it and must match as written (shorter than `forgivesFrom` letters), or where
 * it is one letter (a forgiven word keeps its first letter): what matches that word matches the
 * prefix too, in the same field. Folding accents is the indexes' job; words are compared as the
 * indexes will see them, lower-cased.
 */
export function narrowingWords(words: readonly string[], forgivesFrom = Number.POSITIVE_INFINITY): SearchWord[] {
  const lowered = words.map((w) => w.toLowerCase())
  const last = lowered.at(-1)
  if (last === undefined) return []
  const whole = [...new Set(lowered.slice(0, -1))]
  const covered = whole.some(
    (word) => word.startsWith(last) && ([...last].length === 1 || [...word].length < forgivesFrom),
  )
  return [...whole.map((text) => ({ text, prefix: false })), ...(covered ? [] : [{ text: last, prefix: true }])]
}

/** A search's words as one key: equal keys, equal searches. */
export function searchKey(words: readonly SearchWord[]): string {
  return words.map((w) => (w.prefix ? `${w.text}*` : w.text)).join(' ')
}
