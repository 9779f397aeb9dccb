import { describe, expect, it } from 'bun:test'
import { encodeCursor } from '../../src/jsonapi/cursor'
import { resourceJson, resourceObject, unlinkedResource, unlinkedResourceJson } from '../../src/jsonapi/document'
import type { ResourceDescription } from '../../src/model/description'
import type { Linkage, RecordGraph } from '../../src/model/query'
import type { StoredRecord } from '../../src/model/record'
import { resources } from '../../src/resources/registry'

describe('unlinkedResourceJson', () => {
  const names = ['Plain', 'Quote " and backslash \\', 'Émile 📚', 'Line\nbreak\ttab', '\u2028\u0000', ' ']
  for (const resource of resources.all) {
    it(`writes exactly the JSON of unlinkedResource for ${resource.type}`, () => {
      for (const [i, name] of names.entries()) {
        const record = { id: i + 1, attributes: { name }, toOne: { author: 3, book_collection: null } }
        const json = unlinkedResourceJson(resource, record)
        expect(json).toBe(JSON.stringify(unlinkedResource(resource, record)))
        expect(JSON.parse(json).attributes.name).toBe(name)
      }
    })

    it(`writes exactly the JSON of unlinkedResource for ${resource.type} with an item cursor, last`, () => {
      const record = { id: 7, attributes: { name: 'Plain' }, toOne: { author: 3, book_collection: null } }
      const cursor = encodeCursor(resource.type, [{ field: 'name', descending: true }], ['Plain'])
      const json = unlinkedResourceJson(resource, record, cursor)
      expect(json).toBe(JSON.stringify(unlinkedResource(resource, record, cursor)))
      expect(json).toBe(
        `${unlinkedResourceJson(resource, record).slice(0, -1)},"meta":{"page":{"cursor":"${cursor}"}}}`,
      )
    })
  }
})

describe('resourceJson', () => {
  const books = resources.get('books')
  const authors = resources.get('authors')
  const none: ReadonlyMap<string, ReadonlySet<string>> = new Map()

  /** A graph holding exactly these linkages, by `type:id:relationship`. */
  function graphOf(linkages: Record<string, Linkage>): RecordGraph {
    return { linkage: (type, id, name) => linkages[`${type}:${id}:${name}`], included: [] }
  }

  /**
   * resourceJson's text, after checking that it is exactly JSON.stringify(resourceObject(...)),
   * and so is the same record with an item cursor, which only adds `meta` at the end.
   */
  function rendered(
    resource: ResourceDescription,
    record: StoredRecord,
    linkages: Record<string, Linkage> = {},
    fields = none,
  ): string {
    const context = { registry: resources, graph: graphOf(linkages), fields }
    const json = resourceJson(context, resource, record)
    expect(json).toBe(JSON.stringify(resourceObject(context, resource, record)))
    const cursor = encodeCursor(resource.type, [{ field: 'id', descending: false }], [record.id])
    const paged = resourceJson(context, resource, record, cursor)
    expect(paged).toBe(JSON.stringify(resourceObject(context, resource, record, cursor)))
    expect(paged).toBe(`${json.slice(0, -1)},"meta":{"page":{"cursor":"${cursor}"}}}`)
    return json
  }

  const book = (name = 'Mort'): StoredRecord => ({
    id: 12,
    attributes: { name },
    toOne: { author: 3, book_collection: 4 },
  })
  const author: StoredRecord = { id: 3, attributes: { name: 'Terry Pratchett' }, toOne: {} }

  it('renders relationships without linkage as meta.included = false', () => {
    expect(JSON.parse(rendered(books, book())).relationships).toEqual({
      author: { meta: { included: false } },
      book_collection: { meta: { included: false } },
    })
    expect(JSON.parse(rendered(authors, author)).relationships).toEqual({ books: { meta: { included: false } } })
  })

  it('renders to-one linkage that is set, and one that is null', () => {
    const json = rendered(books, book(), { 'books:12:author': 3, 'books:12:book_collection': null })
    expect(JSON.parse(json).relationships).toEqual({
      author: { data: { type: 'authors', id: '3' } },
      book_collection: { data: null },
    })
  })

  it('renders one linked relationship beside one without linkage', () => {
    rendered(books, book(), { 'books:12:book_collection': 4 })
  })

  it('renders empty to-many linkage as an empty array', () => {
    expect(JSON.parse(rendered(authors, author, { 'authors:3:books': [] })).relationships).toEqual({
      books: { data: [] },
    })
  })

  it('renders several to-many ids in the order the graph gives', () => {
    const json = rendered(authors, author, { 'authors:3:books': [9, 2, 5, 100000, 16777216] })
    expect(JSON.parse(json).relationships.books.data.map((r: { id: string }) => r.id)).toEqual([
      '9',
      '2',
      '5',
      '100000',
      '16777216',
    ])
  })

  it('keeps only the fields a sparse fieldset names, attributes and relationships alike', () => {
    const linked = { 'books:12:author': 3, 'books:12:book_collection': null }
    const fieldsets = [['name'], ['author'], ['name', 'book_collection'], ['book_collection', 'author'], []]
    for (const names of fieldsets) {
      const json = rendered(books, book(), linked, new Map([['books', new Set(names)]]))
      const parsed = JSON.parse(json)
      expect([...Object.keys(parsed.attributes), ...Object.keys(parsed.relationships)].sort()).toEqual(
        [...names].sort(),
      )
    }
  })

  it('ignores a sparse fieldset of another type', () => {
    const json = rendered(books, book(), {}, new Map([['authors', new Set(['name'])]]))
    expect(Object.keys(JSON.parse(json).relationships)).toEqual(['author', 'book_collection'])
  })

  it('escapes names with quotes, backslashes, unicode and control characters', () => {
    const names = [
      'Quote " and backslash \\',
      'Émile 📚',
      'Line\nbreak\ttab\r',
      '\u2028\u2029\u0000\u001f',
      '\ud800 lone',
    ]
    for (const name of names) {
      const json = rendered(books, book(name), { 'books:12:author': 3 })
      expect(JSON.parse(json).attributes.name).toBe(name)
    }
  })
})
