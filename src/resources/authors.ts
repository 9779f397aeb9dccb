import { defineResource } from '../model/description'
import { nameAttribute, nameFilters } from '../model/name-fields'

export const authors = defineResource({
  type: 'authors',
  singular: 'author',
  title: 'Author',
  table: 'authors',
  attributes: {
    name: nameAttribute("The author's name.", 'J.R.R. Tolkien'),
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
    ...nameFilters('the name'),
  },
  plainFilters: {},
  sortable: ['name'],
  defaultInclude: ['books'],
})
