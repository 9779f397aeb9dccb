import { defineResource } from '../model/description'
import { nameAttribute, nameFilters } from '../model/name-fields'

export const bookCollections = defineResource({
  type: 'book_collections',
  singular: 'book_collection',
  title: 'Book collection',
  table: 'book_collections',
  attributes: {
    name: nameAttribute('The name of the collection.', 'Middle-earth'),
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
    ...nameFilters('the name'),
  },
  plainFilters: {},
  sortable: ['name'],
  defaultInclude: ['books'],
})
