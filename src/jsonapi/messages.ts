/** Validation messages, worded as Rails words them. */

/** `book_collection` -> `Book collection`. */
export function humanize(field: string): string {
  const words = field.replaceAll('_', ' ').trim()
  return words.charAt(0).toUpperCase() + words.slice(1)
}

export const messages = {
  blank: (field: string) => `${humanize(field)} can't be blank`,
  notAString: (field: string) => `${humanize(field)} must be a string`,
  tooLong: (field: string, maximum: number) => `${humanize(field)} is too long (maximum is ${maximum} characters)`,
  mustExist: (relationship: string) => `${humanize(relationship)} must exist`,
  unknownAttribute: (field: string) => `${humanize(field)} is not a known attribute`,
  unknownRelationship: (field: string) => `${humanize(field)} is not a known relationship`,
}
