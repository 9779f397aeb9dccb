import type { FilterDescription, SearchField, StringAttribute } from './description'

/** The `name` every type has: required, not blank, one line, at most 1000 characters, stored in NFC. */
export function nameAttribute(description: string, example: string): StringAttribute {
  return { kind: 'string', column: 'name', required: true, maxLength: 1000, isName: true, description, example }
}

/** `filter[name]` (exact) and `filter[search]` (full text over `fields`, which `searched` puts in words). */
export function nameFilters(
  searched: string,
  fields: readonly SearchField[] = [{ attribute: 'name', weight: 1 }],
): Record<'name' | 'search', FilterDescription> {
  return {
    name: { kind: 'attribute', attribute: 'name', description: 'Only the records with exactly this name.' },
    search: {
      kind: 'search',
      description: `Full-text search of ${searched}: the last word a prefix and the others whole words, any case and accents, typos forgiven (one from 5 letters, two from 9), ranked fewest typos first (docs/search.md).`,
      fields,
    },
  }
}
