import { describe, expect, it } from 'bun:test'
import { listPlace, recordPlace } from '../../src/http/read-threads/read-place'
import { DEFAULT_LIMITS } from '../../src/jsonapi/limits'
import { parseFetchQuery } from '../../src/jsonapi/query'
import type { StoreFilter } from '../../src/model/query'
import { resources } from '../../src/resources/registry'

const books = resources.get('books')
const authors = resources.get('authors')
const limits = { ...DEFAULT_LIMITS, defaultSize: 20, maxSize: 2000 }

/** Where `GET /books?<query>` runs, and whether it is a bounded page. */
function placeOf(query: string, scope: readonly StoreFilter[] = [], type = 'books') {
  const resource = resources.get(type)
  const parsed = parseFetchQuery(resources, resource, `/api/v1/${type}?${query}`, 'list', limits)
  const { place, bounded } = listPlace(resources, resource, parsed, [...scope, ...parsed.filters])
  return `${place}${bounded ? ' bounded' : ''}`
}

describe('where a list runs', () => {
  it('keeps a shallow page of no search that follows no to-many relationship on the main thread', () => {
    expect(placeOf('page[size]=20')).toBe('here bounded')
    expect(placeOf('page[number]=51&page[size]=20')).toBe('here bounded')
    expect(placeOf('page[offset]=1000&page[limit]=20&include=author')).toBe('here bounded')
    expect(placeOf('page[size]=20&filter[author]=1&sort=-name')).toBe('here bounded')
    expect(placeOf('page[size]=1001')).toBe('here')
  })

  it('sends a page whose cost grows with the data to a read thread: a search, a deep offset, a to-many include', () => {
    expect(placeOf('page[size]=20&filter[search]=tolkien')).toBe('thread bounded')
    expect(placeOf('page[number]=52&page[size]=20')).toBe('thread bounded')
    expect(placeOf('page[offset]=1001&page[limit]=20')).toBe('thread bounded')
    expect(placeOf('page[size]=20&include=books', [], 'authors')).toBe('thread')
    expect(placeOf('page[size]=20&include=author.books')).toBe('thread')
  })

  it('counts an unpaginated list an index serves, and sends any other to a read thread', () => {
    expect(placeOf('')).toBe('counted')
    expect(placeOf('include=author,book_collection')).toBe('counted')
    expect(placeOf('', [{ kind: 'relationship', relationship: 'author', ids: [1], orNone: false }])).toBe('counted')
    expect(placeOf('filter[name]=The%20Hobbit')).toBe('counted')
    expect(placeOf('filter[search]=tolkien')).toBe('thread')
    expect(placeOf('filter[author]=1,2')).toBe('thread')
    expect(placeOf('filter[author]=1&filter[name]=x')).toBe('thread')
    expect(placeOf('include=books', [], 'authors')).toBe('thread')
  })
})

describe('where a single record runs', () => {
  it('on a read thread when its answer can grow: it links or includes a to-many relationship', () => {
    expect(recordPlace(resources, books, new Map())).toBe('here')
    expect(recordPlace(resources, books, new Map([['author', new Map()]]))).toBe('here')
    expect(recordPlace(resources, books, new Map([['author', new Map([['books', new Map()]])]]))).toBe('thread')
    expect(recordPlace(resources, authors, new Map())).toBe('thread')
  })
})
