/**
 * The search bench's generators (bench/parts/search/): the catalogue is the same for the same seed,
 * and the query family drawn from its words is the same for the same seed, another for another,
 * holds every kind of query, and keeps to issue 34's rules for misspellings. What the bench
 * measures is not checked here.
 */
import { describe, expect, it } from 'bun:test'
import { generateCatalogue } from '../../bench/parts/search/catalogue'
import { anyWordStartsWith, type CatalogueWords, WordTally, wordsOf } from '../../bench/parts/search/catalogue-words'
import { familyHash, QUERY_KINDS, queryFamily } from '../../bench/parts/search/family'
import { editDistance } from '../../bench/parts/search/typos'

const BOOKS = 20_000

/** The catalogue's words as the bench reads them back, ids given as an import would (authors by first appearance). */
function catalogueWords(books: number): CatalogueWords {
  const tally = new WordTally(books)
  const authors = new Map<string, number>()
  let id = 0
  for (const book of generateCatalogue(books)) {
    const authorId = authors.get(book.author) ?? authors.size + 1
    authors.set(book.author, authorId)
    tally.add({ id: ++id, title: book.title, authorId, author: book.author, collection: book.collection || null })
  }
  return tally.finish()
}

const words = catalogueWords(BOOKS)

describe('the search bench catalogue', () => {
  it('is the same for the same seed, and its lines are distinct as `catalogue import` counts them', () => {
    const first = [...generateCatalogue(2000)]
    expect([...generateCatalogue(2000)]).toEqual(first)
    expect([...generateCatalogue(2000, 35)]).not.toEqual(first)
    expect(new Set(first.map((b) => `${b.title}\t${b.author}\t${b.collection}`)).size).toBe(2000)
  })
})

describe('the search bench query family', () => {
  it('is the same for the same seed and another for another seed', () => {
    const family = queryFamily(words, 7)
    expect(queryFamily(words, 7)).toEqual(family)
    expect(familyHash(queryFamily(words, 8))).not.toBe(familyHash(family))
  })

  it('holds every kind, 100 to 200 queries, each once, none over the 10 words a search takes', () => {
    const family = queryFamily(words, 7)
    expect(family.length).toBeGreaterThanOrEqual(100)
    expect(family.length).toBeLessThanOrEqual(200)
    for (const kind of QUERY_KINDS) expect(family.filter((q) => q.kind === kind).length).toBeGreaterThan(0)
    expect(new Set(family.map((q) => q.text)).size).toBe(family.length)
    expect(family.map((q) => q.text)).toContain('a e i o u k')
    for (const q of family) expect(wordsOf(q.text).length).toBeLessThanOrEqual(10)
    for (const q of family.filter((q) => q.kind === 'long')) expect(wordsOf(q.text).length).toBeGreaterThanOrEqual(6)
  })

  it('types a word of a title a letter at a time after the whole word before it', () => {
    const typing = queryFamily(words, 7).filter((q) => q.kind === 'typing')
    const [whole = '', next = ''] = (typing.at(-1)?.text ?? '').split(' ')
    expect(whole.length).toBeGreaterThanOrEqual(3)
    expect(next.length).toBeGreaterThanOrEqual(4)
    // The last title typed: its keystrokes are the last queries of the kind, in order.
    expect(typing.slice(-next.length).map((q) => q.text)).toEqual(
      Array.from({ length: next.length }, (_, i) => `${whole} ${next.slice(0, i + 1)}`),
    )
  })

  it('misspells a title word of its book by one edit from 5 letters and two from 9, never the first letter', () => {
    const typos = queryFamily(words, 7).filter((q) => q.typo !== undefined)
    expect(typos.filter((q) => q.kind === 'one typo').length).toBeGreaterThan(0)
    expect(typos.filter((q) => q.kind === 'two typos').length).toBeGreaterThan(0)
    const sampled = new Map(words.samples.map((book) => [book.id, book]))
    for (const q of typos) {
      const right = q.typo?.right ?? ''
      const book = sampled.get(q.typo?.bookId ?? 0)
      expect(book && wordsOf(book.title)).toContain(right)
      expect(book?.authorId).toBe(q.typo?.authorId ?? -1)
      expect(editDistance(right, q.text)).toBe(right.length >= 9 ? 2 : 1)
      expect(right.length).toBeGreaterThanOrEqual(5)
      expect(q.text[0]).toBe(right[0])
      expect(right.startsWith(q.text)).toBe(false)
    }
  })

  it('draws words that match nothing from what no word of the catalogue starts with', () => {
    for (const q of queryFamily(words, 7).filter((q) => q.kind === 'nothing')) {
      expect(anyWordStartsWith(words.allWords, q.text)).toBe(false)
    }
    expect(anyWordStartsWith(words.allWords, 'the')).toBe(true)
  })
})
