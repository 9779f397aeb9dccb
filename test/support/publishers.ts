import { defineResource } from '../../src/model/description'
import { nameAttribute, nameFilters } from '../../src/model/name-fields'
import { authors } from '../../src/resources/authors'
import { bookCollections } from '../../src/resources/book-collections'
import { books } from '../../src/resources/books'
import { ResourceRegistry } from '../../src/resources/registry'
import { addToOne, createType, type SharedMigration } from '../../src/store/sql/schema-changes'

// A fourth type, as a newcomer would add it (docs/schema.md): its description, a to-one on the
// books that points at it, a registry with it, and one migration entry. Nothing else is written.

export const publishers = defineResource({
  type: 'publishers',
  singular: 'publisher',
  title: 'Publisher',
  table: 'publishers',
  attributes: {
    name: nameAttribute("The publisher's name.", 'George Allen & Unwin'),
  },
  relationships: {
    books: {
      kind: 'to-many',
      target: 'books',
      inverse: 'publisher',
      description: 'The books this publisher published.',
    },
  },
  filters: {
    ...nameFilters('the name'),
  },
  plainFilters: {},
  sortable: ['name'],
  defaultInclude: ['books'],
})

/** The books, which now may name their publisher. */
export const publishedBooks = defineResource({
  ...books,
  relationships: {
    ...books.relationships,
    publisher: {
      kind: 'to-one',
      target: 'publishers',
      column: 'publisher_id',
      required: false,
      idAttribute: 'publisher_id',
      onTargetDelete: 'nullify',
      description: 'The publisher of the book, if known.',
    },
  },
  filters: {
    ...books.filters,
    publisher: {
      kind: 'relationship',
      relationship: 'publisher',
      description: 'Only the books of these publishers (ids).',
    },
  },
})

export const registryWithPublishers = new ResourceRegistry([authors, bookCollections, publishedBooks, publishers])

export const publishersMigration: SharedMigration = {
  name: 'publishers, and the publisher of a book',
  changes: [createType(publishers), addToOne(publishedBooks, 'publisher')],
}
