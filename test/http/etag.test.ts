import { describe, expect, it } from 'bun:test'
import { recordState } from '../../src/http/etag'
import { resources } from '../../src/resources/registry'

describe('recordState', () => {
  // Instances of two versions serve one database during a rolling deploy: a tag one of them gave
  // must still guard a write (If-Match) on the other, so the state's form is fixed.
  it('hashes the JSON array of type, id, attributes and to-one ids, in description order', () => {
    const books = resources.get('books')
    const cases = [
      { id: 12, attributes: { name: 'Mort' }, toOne: { author: 3, book_collection: 4 } },
      { id: 7, attributes: { name: 'Quote " \\ Émile 📚 \u2028' }, toOne: { author: 1, book_collection: null } },
    ]
    for (const record of cases) {
      const array = ['books', record.id, record.attributes.name, record.toOne.author, record.toOne.book_collection]
      expect(recordState(books, record)).toBe(Bun.hash.xxHash3(JSON.stringify(array)).toString(36))
    }
  })

  it('writes a type without to-one relationships as its id and attributes alone', () => {
    const record = { id: 3, attributes: { name: 'Terry Pratchett' }, toOne: {} }
    expect(recordState(resources.get('authors'), record)).toBe(
      Bun.hash.xxHash3(JSON.stringify(['authors', 3, 'Terry Pratchett'])).toString(36),
    )
  })
})
