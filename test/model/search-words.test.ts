import { describe, expect, it } from 'bun:test'
import { narrowingWords, searchKey, searchWords } from '../../src/model/search-words'

const whole = (text: string) => ({ text, prefix: false })
const prefix = (text: string) => ({ text, prefix: true })

describe('searchWords', () => {
  it('splits a text into runs of letters and digits', () => {
    expect(searchWords('The "Hobbit", 1937!')).toEqual(['The', 'Hobbit', '1937'])
    expect(searchWords(' -- ')).toEqual([])
  })
})

describe('narrowingWords', () => {
  it('takes the last word as a prefix and the words before it as whole words', () => {
    expect(narrowingWords(['scarlet', 'lab'])).toEqual([whole('scarlet'), prefix('lab')])
    expect(narrowingWords(['a', 'e', 'i', 'o', 'u', 'k'])).toEqual([...'aeiou'].map(whole).concat(prefix('k')))
  })

  it('keeps a whole word once, wherever it is repeated', () => {
    expect(narrowingWords(['of', 'the', 'of', 'ring'])).toEqual([whole('of'), whole('the'), prefix('ring')])
  })

  it('keeps whole words that begin one another: each must stand whole', () => {
    expect(narrowingWords(['of', 'office', 'x'])).toEqual([whole('of'), whole('office'), prefix('x')])
  })

  it('drops the prefix where a whole word of the search begins with it and must match as written', () => {
    expect(narrowingWords(['office', 'of'])).toEqual([whole('office')])
    expect(narrowingWords(['of', 'of'])).toEqual([whole('of')])
    expect(narrowingWords(['bridge', 'brid'], 5)).toEqual([whole('bridge'), prefix('brid')])
    expect(narrowingWords(['bridge', 'b'], 5)).toEqual([whole('bridge')])
    expect(narrowingWords(['road', 'ro'], 5)).toEqual([whole('road')])
  })

  it('keeps a prefix found inside a whole word but not at its start', () => {
    expect(narrowingWords(['roof', 'of'])).toEqual([whole('roof'), prefix('of')])
  })

  it('compares words lower-cased, and gives them lower-cased', () => {
    expect(narrowingWords(['Of', 'OF', 'of'])).toEqual([whole('of')])
    expect(narrowingWords(['Winter', 'STONE'])).toEqual([whole('winter'), prefix('stone')])
  })

  it('gives nothing for nothing', () => {
    expect(narrowingWords([])).toEqual([])
  })
})

describe('searchKey', () => {
  it('tells a prefix from the same word whole', () => {
    expect(searchKey([whole('the'), prefix('w')])).toBe('the w*')
    expect(searchKey([whole('w')])).not.toBe(searchKey([prefix('w')]))
  })
})
