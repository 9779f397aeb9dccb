/** Validation messages, worded as Rails words them. */

/** `book_collection` -> `Book collection`. */
export function humanize(field: string): string {
  const words = field.replaceAll('_', ' ').trim()
  return words.charAt(0).toUpperCase() + words.slice(1)
}

/** A type or relationship name as words: `book_collection` -> `book collection`. */
export function words(name: string): string {
  return name.replaceAll('_', ' ')
}

/** `a` or `an`, as the word's first letter sounds in the names the service has (`an author`, `a book`). */
export function withArticle(phrase: string): string {
  return `${/^[aeiou]/i.test(phrase) ? 'an' : 'a'} ${phrase}`
}

export const messages = {
  blank: (field: string) => `${humanize(field)} can't be blank`,
  notAString: (field: string) => `${humanize(field)} must be a string`,
  notUnicode: (field: string) => `${humanize(field)} must be valid Unicode text`,
  /** `Name must not contain control characters or line breaks (U+000A at character 6)`: which one, and where. */
  breaksLine: (field: string, codePoint: number, position: number) =>
    `${humanize(field)} must not contain control characters or line breaks (U+${codePoint.toString(16).toUpperCase().padStart(4, '0')} at character ${position})`,
  tooLong: (field: string, maximum: number) => `${humanize(field)} is too long (maximum is ${maximum} characters)`,
  mustExist: (relationship: string) => `${humanize(relationship)} must exist`,
  unknownAttribute: (field: string) => `${humanize(field)} is not a known attribute`,
  unknownRelationship: (field: string) => `${humanize(field)} is not a known relationship`,
  /** Why the records of a to-many relationship cannot be removed: their link to the owner is required. */
  cannotLeave: (members: string, owner: string) =>
    `${humanize(members)} cannot be removed from their ${humanize(owner).toLowerCase()} or replaced: each needs one. Give them another ${humanize(owner).toLowerCase()} instead, or delete them`,
  /** `Author 3 still has 2 books; delete them or give them another author first`. */
  stillReferenced: (owner: string, id: number, count: number, dependent: { singular: string; plural: string }) => {
    const them = count === 1 ? 'it' : 'them'
    const what = humanize(count === 1 ? dependent.singular : dependent.plural).toLowerCase()
    return `${humanize(owner)} ${id} still has ${count} ${what}; delete ${them} or give ${them} another ${humanize(owner).toLowerCase()} first`
  },
}
