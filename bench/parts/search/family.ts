/**
 * The query family of the search bench (issue 34): about 130 searches drawn with a seed from a
 * loaded catalogue's own words (bench/parts/search/catalogue-words.ts), of every kind people send
 * to a search box: one- to three-letter prefixes, a whole word then each keystroke of the next
 * word of a title, pairs of common words, authors' first, last and full names, series names,
 * misspelled words, long queries, numbers, words that match nothing, and many one-letter words at
 * once. The same words and seed give the same family; another seed another one.
 */
import { anyWordStartsWith, type CatalogueBook, type CatalogueWords, wordsOf } from './catalogue-words'
import { below, pick, type Random, seededRandom, shuffled, weightedSampler } from './seeded-random'
import { editsAllowed, misspell } from './typos'

export const QUERY_KINDS = [
  'one letter',
  'two letters',
  'three letters',
  'typing',
  'common pair',
  'first name',
  'last name',
  'full name',
  'series',
  'one typo',
  'two typos',
  'long',
  'number',
  'nothing',
  'one-letter words',
] as const
export type QueryKind = (typeof QUERY_KINDS)[number]

/** What a kind stands for, for the report. */
export const KIND_NOTES: Record<QueryKind, string> = {
  'one letter': 'a one-letter prefix',
  'two letters': 'a two-letter prefix',
  'three letters': 'a three-letter prefix',
  typing: "a title's word, then each keystroke of the next (`scarlet l`, `scarlet la`, ...)",
  'common pair': 'two common title words',
  'first name': "an author's first name",
  'last name': "an author's last name",
  'full name': "an author's first and last name",
  series: "a series' name",
  'one typo': 'a title word of 5-8 letters, one edit off',
  'two typos': 'a title word of 9+ letters, two edits off',
  long: '6-10 words: a book’s own, or common ones',
  number: 'a number',
  nothing: 'a word no name starts with',
  'one-letter words': '`a e i o u k` and another row of single letters',
}

export interface FamilyQuery {
  readonly kind: QueryKind
  readonly text: string
  /** For a misspelled word: the right one and the book it was taken from (for typo recall). */
  readonly typo?: { readonly right: string; readonly bookId: number; readonly authorId: number }
}

/** How many queries of each kind; `typing` is the keystrokes of TYPED_TITLES titles. */
const COUNTS = {
  oneLetter: 6,
  twoLetters: 8,
  threeLetters: 8,
  commonPairs: 10,
  names: 5,
  fullNames: 6,
  series: 8,
  oneTypo: 10,
  twoTypos: 8,
  long: 8,
  numbers: 5,
  nothing: 5,
} as const
const TYPED_TITLES = 4

/** Picks from `items` in proportion to `weight`, `count` distinct results of `make` (fewer if it runs dry). */
function draw<T>(
  random: Random,
  items: readonly T[],
  weight: (item: T) => number,
  count: number,
  make: (item: T) => string | undefined,
): string[] {
  if (items.length === 0) return []
  const sample = weightedSampler(items.map(weight))
  const made = new Set<string>()
  for (let tries = 0; made.size < count && tries < count * 200; tries++) {
    const text = make(items[sample(random)] as T)
    if (text !== undefined) made.add(text)
  }
  return [...made]
}

/** Words in a search that narrow it (none a prefix of another), as the service keeps them. */
const narrowing = (words: readonly string[]) => words.every((w) => !words.some((o) => o !== w && o.startsWith(w)))

const letters = (word: string) => /^[a-z]+$/.test(word)

export function queryFamily(catalogue: CatalogueWords, seed: number): FamilyQuery[] {
  const random = seededRandom(seed)
  const family: FamilyQuery[] = []
  const add = (kind: QueryKind, texts: readonly string[]) => {
    for (const text of texts) family.push({ kind, text })
  }
  const titleWords = [...catalogue.titleWords.entries()].sort(([a], [b]) => (a < b ? -1 : 1))
  const frequency = ([, books]: readonly [string, number]) => books
  const byFrequency = [...titleWords].sort(([, a], [, b]) => b - a)
  const common = byFrequency.slice(0, 300).filter(([w]) => w.length > 1)
  const samples = catalogue.samples

  // Prefixes, drawn as often as the words that start with them.
  const prefixes = (n: number, count: number) =>
    draw(random, titleWords, frequency, count, ([w]) => (w.length >= n && letters(w) ? w.slice(0, n) : undefined))
  add('one letter', prefixes(1, COUNTS.oneLetter))
  add('two letters', prefixes(2, COUNTS.twoLetters))
  add('three letters', prefixes(3, COUNTS.threeLetters))

  // As one types: a whole word of a title, then the next word of it a letter at a time.
  const typed = shuffled(random, samples).flatMap((book) => {
    const words = wordsOf(book.title)
    const at = words.findIndex((w, i) => {
      const next = words[i + 1] ?? ''
      return w.length >= 3 && letters(w) && letters(next) && next.length >= 4 && next.length <= 9
    })
    return at === -1 ? [] : [[words[at] as string, words[at + 1] as string] as const]
  })
  for (const [whole, next] of typed.slice(0, TYPED_TITLES)) {
    add(
      'typing',
      Array.from({ length: next.length }, (_, i) => `${whole} ${next.slice(0, i + 1)}`),
    )
  }

  // Two common words: half at random, half side by side in some title.
  const pairs = draw(random, common, frequency, COUNTS.commonPairs / 2, ([a]) => {
    const b = pick(random, common)[0]
    return narrowing([a, b]) ? `${a} ${b}` : undefined
  })
  const isCommon = new Set(byFrequency.slice(0, 1000).map(([w]) => w))
  const sideBySide = shuffled(random, samples).flatMap((book) => {
    const words = wordsOf(book.title)
    const i = words.findIndex(
      (w, j) => isCommon.has(w) && isCommon.has(words[j + 1] ?? '') && narrowing([w, words[j + 1] ?? '']),
    )
    return i === -1 ? [] : [`${words[i]} ${words[i + 1]}`]
  })
  add('common pair', [...new Set([...pairs, ...sideBySide.slice(0, COUNTS.commonPairs - pairs.length)])])

  // Authors and series: half as often as their books (the well-known), half uniformly.
  const names = (
    items: readonly { name: string; books: number }[],
    count: number,
    make: (name: string) => string | undefined,
  ) => [
    ...new Set([
      ...draw(
        random,
        items,
        (a) => a.books,
        Math.ceil(count / 2),
        (a) => make(a.name),
      ),
      ...draw(
        random,
        items,
        () => 1,
        Math.floor(count / 2),
        (a) => make(a.name),
      ),
    ]),
  ]
  const nameWords = (name: string) => wordsOf(name).filter((w) => w.length > 1)
  add(
    'first name',
    names(catalogue.authors, COUNTS.names, (name) => nameWords(name)[0]),
  )
  add(
    'last name',
    names(catalogue.authors, COUNTS.names, (name) => nameWords(name).at(-1)),
  )
  add(
    'full name',
    names(catalogue.authors, COUNTS.fullNames, (name) => name.toLowerCase()),
  )
  add(
    'series',
    names(catalogue.collections, COUNTS.series, (name) => name.toLowerCase()),
  )

  // Misspelled title words, each remembered with the book it was taken from.
  const typos = (edits: 1 | 2, count: number) => {
    const made: FamilyQuery[] = []
    for (const book of shuffled(random, samples)) {
      if (made.length >= count) break
      const candidates = wordsOf(book.title).filter((w) => letters(w) && editsAllowed(w.length) === edits)
      if (candidates.length === 0) continue
      const right = pick(random, candidates)
      const wrong = misspell(random, right)
      if (wrong === undefined || made.some((q) => q.text === wrong)) continue
      made.push({
        kind: edits === 1 ? 'one typo' : 'two typos',
        text: wrong,
        typo: { right, bookId: book.id, authorId: book.authorId },
      })
    }
    return made
  }
  family.push(...typos(1, COUNTS.oneTypo), ...typos(2, COUNTS.twoTypos))

  // Long: a book's own words (title, author, series), or common words that rarely meet.
  const ownWords = (book: CatalogueBook) => {
    const words = [...new Set(wordsOf(`${book.title} ${book.author} ${book.collection ?? ''}`))]
    const kept = words.filter((w) => !words.some((o) => o !== w && o.startsWith(w)))
    return kept.length >= 6 ? kept.slice(0, 6 + below(random, 5)).join(' ') : undefined
  }
  const own = shuffled(random, samples)
    .flatMap((book) => ownWords(book) ?? [])
    .slice(0, COUNTS.long / 2)
  const heap = byFrequency.slice(0, 2000)
  const scattered = draw(random, heap, frequency, COUNTS.long / 2, () => {
    const words = draw(random, heap, frequency, 6 + below(random, 5), ([w]) => w)
    return narrowing(words) ? words.join(' ') : undefined
  })
  add('long', [...own, ...scattered])

  // Numbers in titles, and one in none.
  const numbers = titleWords.filter(([w]) => /^[0-9]+$/.test(w))
  const absent = Array.from({ length: 20 }, () => String(100_000 + below(random, 900_000))).find(
    (n) => !anyWordStartsWith(catalogue.allWords, n),
  )
  add('number', [...draw(random, numbers, frequency, COUNTS.numbers - 1, ([w]) => w), ...(absent ? [absent] : [])])

  // Nothing: letters no word starts with, and a common word with a tail no word has.
  const gibberish = Array.from({ length: 200 }, () =>
    Array.from({ length: 4 + below(random, 5) }, () => String.fromCharCode(97 + below(random, 26))).join(''),
  )
  const tails = common.map(([w]) => w + String.fromCharCode(97 + below(random, 26), 97 + below(random, 26)))
  const nothing = (candidates: readonly string[], count: number) =>
    shuffled(random, candidates)
      .filter((w) => !anyWordStartsWith(catalogue.allWords, w))
      .slice(0, count)
  add('nothing', [...nothing(gibberish, 3), ...nothing(tails, COUNTS.nothing - 3)])

  // Many one-letter words: the hostile one of the issue, and another row.
  const row = shuffled(random, [...'bcdfghjlmnprstvw']).slice(0, 6 + below(random, 4))
  add('one-letter words', ['a e i o u k', row.join(' ')])

  // A text drawn twice (a name that is also a title word) is asked once, under its first kind.
  const seen = new Set<string>()
  const once: FamilyQuery[] = []
  for (const query of family) {
    if (seen.has(query.text)) continue
    seen.add(query.text)
    once.push(query)
  }
  return once
}

/** A short fingerprint of a family: two runs (or two backends) with the same one asked the same queries. */
export function familyHash(family: readonly FamilyQuery[]): string {
  return new Bun.CryptoHasher('sha256')
    .update(family.map((q) => `${q.kind}\t${q.text}`).join('\n'))
    .digest('hex')
    .slice(0, 10)
}
