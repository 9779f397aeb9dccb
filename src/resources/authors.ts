import { defineResource } from './description'

export const authors = defineResource({
  type: 'authors',
  singular: 'author',
  title: 'Author',
  table: 'authors',
  attributes: {
    name: {
      kind: 'string',
      column: 'name',
      required: true,
      maxLength: 1000,
      description: "The author's name.",
    },
  },
  relationships: {
    books: {
      kind: 'to-many',
      target: 'books',
      inverse: 'author',
      description: 'The books this author wrote.',
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
