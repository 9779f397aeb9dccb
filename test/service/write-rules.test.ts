import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseWriteDocument } from '../../src/jsonapi/request-document'
import { resources } from '../../src/resources/registry'
import {
  checkReferencesExist,
  failsAsParsed,
  invalidWrite,
  mustExist,
  referencesMissing,
  refuseOrphaning,
  requiredToOne,
  stillReferenced,
} from '../../src/service/write-rules'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'

const authors = resources.get('authors')
const collections = resources.get('book_collections')
const books = resources.get('books')

const authorMustExist = {
  title: 'Unprocessable Entity',
  detail: 'Author must exist',
  source: { parameter: 'author', pointer: 'data/attributes/author' },
}
const collectionMustExist = {
  title: 'Unprocessable Entity',
  detail: 'Book collection must exist',
  source: { parameter: 'book_collection', pointer: 'data/attributes/book_collection' },
}

describe('a related record must exist', () => {
  it('says "<Relationship> must exist" for each missing one, in the description\'s order, once', () => {
    expect(mustExist(books, ['book_collection', 'author', 'author'])).toEqual([
      { detail: 'Author must exist', parameter: 'author', pointer: 'data/attributes/author' },
      {
        detail: 'Book collection must exist',
        parameter: 'book_collection',
        pointer: 'data/attributes/book_collection',
      },
    ])
  })

  it('points relative to a REST document, and under the operation in an atomic one', () => {
    expect(mustExist(books, ['author'])[0]?.pointer).toBe('data/attributes/author')
    expect(mustExist(books, ['author'], '/atomic:operations/3')[0]?.pointer).toBe(
      '/atomic:operations/3/data/attributes/author',
    )
  })

  it('answers 422 with one error object per missing relationship and no status member', () => {
    const error = referencesMissing(books, ['book_collection', 'author'])
    expect(error.status).toBe(422)
    expect(error.errors).toEqual([authorMustExist, collectionMustExist])
  })

  it('puts missing related records before field errors, and is no error when there is neither', () => {
    const blank = { detail: "Name can't be blank", parameter: 'name', pointer: 'data/attributes/name' }
    expect(invalidWrite(books, ['author'], [blank])?.errors).toEqual([
      authorMustExist,
      {
        title: 'Unprocessable Entity',
        detail: "Name can't be blank",
        source: { parameter: 'name', pointer: blank.pointer },
      },
    ])
    expect(invalidWrite(books, [], [])).toBeUndefined()
  })

  describe('checked against the store', () => {
    let dir: string
    let store: SqliteStore

    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'catalogue-rules-'))
      store = SqliteStore.open(join(dir, 'catalogue.db'), resources)
    })

    afterEach(async () => {
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    })

    const bookWith = (relationships: Record<string, unknown>, attributes: Record<string, unknown> = {}) =>
      parseWriteDocument(resources, books, { data: { type: 'books', attributes, relationships } }, { kind: 'create' })

    it('asks the store nothing about a write that fails nothing as parsed', async () => {
      const author = await store.create(authors, { attributes: { name: 'Ursula' }, toOne: {} })
      if (!author.ok) throw new Error('author not created')
      const write = bookWith(
        { author: { data: { type: 'authors', id: String(author.record.id) } } },
        { name: 'Earthsea' },
      )
      let asked = 0
      const counted = {
        missingReferences: (...args: Parameters<SqliteStore['missingReferences']>) => {
          asked++
          return store.missingReferences(...args)
        },
      }
      expect(failsAsParsed(write)).toBe(false)
      expect(await checkReferencesExist(counted, books, write)).toBeUndefined()
      expect(asked).toBe(0)
    })

    it("reports a reference the store does not hold beside the write's own faults", async () => {
      const write = bookWith({ book_collection: { data: { type: 'book_collections', id: '999' } } })
      expect(failsAsParsed(write)).toBe(true)
      const error = await checkReferencesExist(store, books, write)
      expect(error?.errors.map((e) => e.detail)).toEqual([
        'Author must exist',
        'Book collection must exist',
        "Name can't be blank",
      ])
    })
  })
})

describe('a required to-one cannot be null', () => {
  it('refuses null for a book\'s author with "Author must exist"', () => {
    expect(requiredToOne(books, 'author', null)?.errors).toEqual([authorMustExist])
    expect(requiredToOne(books, 'author', null, '/atomic:operations/0')?.errors[0]?.source?.pointer).toBe(
      '/atomic:operations/0/data/attributes/author',
    )
  })

  it('lets a required to-one name a record, and an optional one be null', () => {
    expect(requiredToOne(books, 'author', 7)).toBeUndefined()
    expect(requiredToOne(books, 'author', { lid: 'a' })).toBeUndefined()
    expect(requiredToOne(books, 'book_collection', null)).toBeUndefined()
  })
})

describe('a book cannot be left without an author', () => {
  const cannotLeave =
    'Books cannot be removed from their author or replaced: each needs one. Give them another author instead, or delete them'

  it("refuses removing or replacing an author's books with 403", () => {
    for (const change of ['remove', 'replace'] as const) {
      const error = refuseOrphaning(resources, authors, 'books', change)
      expect(error?.status).toBe(403)
      expect(error?.errors).toEqual([{ status: '403', title: 'Forbidden', detail: cannotLeave }])
    }
  })

  it("points at the operation's op when one is given", () => {
    expect(refuseOrphaning(resources, authors, 'books', 'remove', '/op')?.errors[0]?.source).toEqual({
      pointer: '/op',
    })
  })

  it('lets books be added to an author, and leave a collection, which they do not need', () => {
    expect(refuseOrphaning(resources, authors, 'books', 'add')).toBeUndefined()
    expect(refuseOrphaning(resources, collections, 'books', 'remove')).toBeUndefined()
    expect(refuseOrphaning(resources, collections, 'books', 'replace')).toBeUndefined()
  })

  it('refuses deleting an author who still has books with 409, counting them', () => {
    const error = stillReferenced(authors, 3, { by: books, count: 2 })
    expect(error.status).toBe(409)
    expect(error.errors).toEqual([
      {
        status: '409',
        title: 'Conflict',
        detail: 'Author 3 still has 2 books; delete them or give them another author first',
      },
    ])
    expect(stillReferenced(authors, 3, { by: books, count: 1 }, '/atomic:operations/1').errors).toEqual([
      {
        status: '409',
        title: 'Conflict',
        detail: 'Author 3 still has 1 book; delete it or give it another author first',
        source: { pointer: '/atomic:operations/1' },
      },
    ])
  })
})
