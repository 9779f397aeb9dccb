import { defineResource } from './description'

export const books = defineResource({
  type: 'books',
  singular: 'book',
  title: 'Book',
  table: 'books',
  attributes: {
    name: {
      kind: 'string',
      column: 'name',
      required: true,
      maxLength: 1000,
      description: 'The title of the book.',
    },
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
    author_id: { relationship: 'author', description: 'Only the books of this author (an id).' },
  },
  defaultInclude: ['author', 'book_collection'],
})
