/**
 * The catalogue the search bench loads: titles, author names and series names generated from a
 * seed, shaped unlike bench/data/import-data.ts's `Book <n>` so that no search path is tuned to
 * one shape of data. Word lengths vary (one syllable to five), words are drawn with Zipf's
 * frequencies (a few in a tenth of all titles, most in a handful), short words more often than
 * long ones; titles hold one to twelve words, some a number or a year; authors have a first and a
 * last name, each common or rare, and write one book or thousands; a third of the books belong to
 * a series (`The Ember Chronicles`, `Tales of Varn`, `Quill Morrow`). The same seed and size give
 * the same CSV, byte for byte.
 */
import { below, pick, type Random, seededRandom, weightedSampler, zipfSampler } from './seeded-random'

/** The seed of the catalogue itself (the queries have their own, `--seed`). */
export const CATALOGUE_SEED = 34

export interface GeneratedBook {
  readonly title: string
  readonly author: string
  /** Empty: in no series. */
  readonly collection: string
}

/** The words a quarter of real titles are made of: they make the commonest prefixes and pairs. */
const SMALL_WORDS = ['the', 'of', 'a', 'and', 'in', 'to', 'on', 'at', 'for', 'with', 'from', 'by', 'an', 'no']
const SERIES_NOUNS = [
  'Chronicles',
  'Saga',
  'Cycle',
  'Trilogy',
  'Quartet',
  'Sequence',
  'Mysteries',
  'Adventures',
  'Tales',
  'Legacy',
  'Archives',
  'Quest',
]

const ONSETS = 'b c d f g h j k l m n p r s t v w z br ch cl cr dr fl gr kl pl pr sc sh sl sp st th tr wh'.split(' ')
const NUCLEI = 'a e i o u a e i o u a e o ai ea ee oo ou ie y'.split(' ')
const CODAS = [
  '',
  '',
  '',
  '',
  '',
  '',
  'n',
  'r',
  'l',
  's',
  't',
  'm',
  'nd',
  'rn',
  'st',
  'rk',
  'll',
  'ng',
  'sh',
  'th',
  'x',
]
/** Syllables per word: one to five, two the most common. */
const SYLLABLES = weightedSampler([0, 22, 46, 24, 7, 1])

function syllable(random: Random, first: boolean): string {
  return (random() < (first ? 0.8 : 0.95) ? pick(random, ONSETS) : '') + pick(random, NUCLEI) + pick(random, CODAS)
}

/** `count` distinct pronounceable words, none of `taken`; shorter ones first, so Zipf makes them commoner. */
function words(random: Random, count: number, taken: ReadonlySet<string>, minSyllables = 1): string[] {
  const made = new Set<string>()
  while (made.size < count) {
    const n = Math.max(minSyllables, SYLLABLES(random))
    let word = ''
    for (let i = 0; i < n; i++) word += syllable(random, i === 0)
    if (word.length >= 3 && word.length <= 16 && !taken.has(word)) made.add(word)
  }
  // A random order in which a short word is more likely to come early (each word's key is an
  // exponential clock whose rate falls with its length): the commonest words are mostly short, and
  // now and then a long one is common.
  return [...made]
    .map((word) => ({ word, key: -Math.log(1 - random()) * (word.length - 2) ** 1.2 }))
    .sort((a, b) => a.key - b.key)
    .map(({ word }) => word)
}

const capital = (word: string) => word.charAt(0).toUpperCase() + word.slice(1)
/** Title case, small words lower-cased except at the start. */
const titled = (parts: readonly string[]) =>
  parts.map((w, i) => (i > 0 && SMALL_WORDS.includes(w) ? w : capital(w))).join(' ')

/** Words per title: one to twelve, three the most common. */
const TITLE_LENGTH = weightedSampler([0, 8, 22, 25, 18, 12, 7, 4, 2, 1, 0.6, 0.3, 0.1])

/** Every `GeneratedBook` of a catalogue of `books` books, in order. */
export function* generateCatalogue(books: number, seed = CATALOGUE_SEED): Generator<GeneratedBook> {
  const random = seededRandom(seed)
  const vocabulary = [
    ...SMALL_WORDS,
    ...words(random, Math.max(2000, Math.min(60_000, books / 4)), new Set(SMALL_WORDS)),
  ]
  const titleWord = zipfSampler(vocabulary.length, 1.02)
  const firstNames = words(random, 2500, new Set(), 2).map(capital)
  const lastNames = words(random, Math.max(1000, Math.min(40_000, books / 10)), new Set(), 2).map(capital)
  const firstName = zipfSampler(firstNames.length, 1)
  const lastName = zipfSampler(lastNames.length, 0.8)

  // Authors: a first and a last name, unique; a middle initial where the pair is taken.
  const authors: string[] = []
  const authorNames = new Set<string>()
  const authorCount = Math.max(50, Math.round(books / 8))
  while (authors.length < authorCount) {
    const first = firstNames[firstName(random)] ?? 'Ann'
    const last = lastNames[lastName(random)] ?? 'Lee'
    let name = `${first} ${last}`
    if (authorNames.has(name)) name = `${first} ${String.fromCharCode(65 + below(random, 26))}. ${last}`
    if (authorNames.has(name)) continue
    authorNames.add(name)
    authors.push(name)
  }
  const author = zipfSampler(authors.length, 0.75)

  // Series: a noun with a word, or two words; drawn from the same words as the titles.
  const series: string[] = []
  const seriesNames = new Set<string>()
  const seriesWord = zipfSampler(vocabulary.length - SMALL_WORDS.length, 0.9)
  const word = () => capital(vocabulary[SMALL_WORDS.length + seriesWord(random)] ?? 'tale')
  const seriesCount = Math.max(10, Math.round(books / 30))
  while (series.length < seriesCount) {
    const shape = random()
    const name =
      shape < 0.3
        ? `The ${word()} ${pick(random, SERIES_NOUNS)}`
        : shape < 0.6
          ? `${word()} ${pick(random, SERIES_NOUNS)}`
          : shape < 0.75
            ? `${pick(random, SERIES_NOUNS)} of ${word()}`
            : `${word()} ${word()}`
    if (seriesNames.has(name)) continue
    seriesNames.add(name)
    series.push(name)
  }
  const inSeries = zipfSampler(series.length, 0.9)
  const volume = zipfSampler(60, 1.2)

  // `catalogue import` takes a book of the same title, author and series as one already present:
  // such a draw is drawn again (a 32-bit hash of the line, so now and then a distinct one too).
  const made = new Set<number>()
  for (let n = 0; n < books; ) {
    const parts: string[] = []
    const length = TITLE_LENGTH(random)
    for (let i = 0; i < length; i++) parts.push(vocabulary[titleWord(random)] ?? 'book')
    // A title ends on a word of its own, not on `of` or `the`.
    while (parts.length > 1 && SMALL_WORDS.includes(parts.at(-1) ?? '')) {
      parts[parts.length - 1] = vocabulary[titleWord(random)] ?? 'book'
    }
    const numbered = random()
    if (numbered < 0.03) parts.push(String(volume(random) + 1))
    else if (numbered < 0.04) parts.unshift(String(1800 + below(random, 226)))
    const book = {
      title: titled(parts),
      author: authors[author(random)] ?? 'Ann Lee',
      collection: random() < 0.33 ? (series[inSeries(random)] ?? '') : '',
    }
    const key = Bun.hash.crc32(`${book.title}\t${book.author}\t${book.collection}`)
    if (made.has(key)) continue
    made.add(key)
    n++
    yield book
  }
}

/** Writes the catalogue as a CSV for `catalogue import` (title, author, collection). */
export async function writeCatalogueCsv(path: string, books: number, seed = CATALOGUE_SEED): Promise<void> {
  const writer = Bun.file(path).writer()
  writer.write('title,author,collection\n')
  // The generator makes letters, digits, spaces and `.` only: no field needs quotes.
  for (const book of generateCatalogue(books, seed)) writer.write(`${book.title},${book.author},${book.collection}\n`)
  await writer.end()
}
