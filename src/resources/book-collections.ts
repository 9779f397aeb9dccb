import { defineResource } from './description'

export const bookCollections = defineResource({
  type: 'book_collections',
  singular: 'book_collection',
  title: 'Book collection',
  table: 'book_collections',
  attributes: {
    name: {
      kind: 'string',
      column: 'name',
      required: true,
      maxLength: 1000,
      description: 'The name of the collection.',
    },
  },
  relationships: {
    books: {
      kind: 'to-many',
      target: 'books',
      inverse: 'book_collection',
      description: 'The books in this collection.',
    },
  },
  filters: {
    name: { kind: 'attribute', attribute: 'name', description: 'Only the records with exactly this name.' },
    search: {
      kind: 'search',
      description: 'Full-text search of the name: word prefixes, any case and accents, ranked.',
    },
  },
  plainFilters: {},
  sortable: ['name'],
  defaultInclude: ['books'],
})
