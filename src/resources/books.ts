import { defineResource } from '../model/description'
import { nameAttribute, nameFilters } from '../model/name-fields'

export const books = defineResource({
  type: 'books',
  singular: 'book',
  title: 'Book',
  table: 'books',
  attributes: {
    name: nameAttribute('The title of the book.', 'The Hobbit'),
  },
  relationships: {
    author: {
      kind: 'to-one',
      target: 'authors',
      column: 'author_id',
      required: true,
      idAttribute: 'author_id',
      onTargetDelete: 'restrict',
      description: 'The author of the book; required.',
    },
    book_collection: {
      kind: 'to-one',
      target: 'book_collections',
      column: 'book_collection_id',
      required: false,
      idAttribute: 'book_collection_id',
      onTargetDelete: 'nullify',
      description: 'The collection the book belongs to, if any.',
    },
  },
  filters: {
    // A match in the title counts most, then the author's name, then the collection's.
    ...nameFilters("the title, the author's name and the collection's name", [
      { attribute: 'name', weight: 10 },
      { relationship: 'author', weight: 2 },
      { relationship: 'book_collection', weight: 1 },
    ]),
    author: { kind: 'relationship', relationship: 'author', description: 'Only the books of these authors (ids).' },
    book_collection: {
      kind: 'relationship',
      relationship: 'book_collection',
      description: 'Only the books in these collections (ids; `null` for books in none).',
    },
  },
  plainFilters: { author_id: 'author' },
  sortable: ['name'],
  defaultInclude: ['author', 'book_collection'],
})
