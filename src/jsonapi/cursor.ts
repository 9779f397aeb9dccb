import type { SortKey } from '../model/query'

/** The sort values of one record, in sort-key order: where a cursor page starts after (or before). */
export type CursorValues = readonly (string | number)[]

interface CursorPayload {
  /** The type and the sort the cursor was made for: a cursor only fits the list it came from. */
  readonly t: string
  readonly s: string
  readonly v: CursorValues
}

function sortSpec(sort: readonly SortKey[]): string {
  return sort.map((k) => (k.descending ? `-${k.field}` : k.field)).join(',')
}

/**
 * An opaque cursor: base64url of the record's sort values with the type and sort they belong to.
 * Keyset cursors name a position, not an offset, so inserts and deletes elsewhere do not shift it.
 */
export function encodeCursor(type: string, sort: readonly SortKey[], values: CursorValues): string {
  return cursorEncoder(type, sort)(values)
}

/** Where a cursor's UTF-8 bytes are written before base64: one buffer, not one per cursor. */
let scratch = Buffer.allocUnsafe(4096)

function base64url(text: string): string {
  // A UTF-16 code unit takes at most 3 bytes of UTF-8.
  if (text.length * 3 > scratch.length) scratch = Buffer.allocUnsafe(text.length * 3)
  return scratch.toString('base64url', 0, scratch.write(text, 'utf8'))
}

/**
 * Cursors of one list, with the part every cursor of it shares written once: a page gives each of
 * its records an item cursor, so this is on the path of every page (about 1 µs a record). The
 * text is `JSON.stringify` of a CursorPayload, key order included.
 */
export function cursorEncoder(type: string, sort: readonly SortKey[]): (values: CursorValues) => string {
  const head = `{"t":${JSON.stringify(type)},"s":${JSON.stringify(sortSpec(sort))},"v":`
  return (values) => base64url(`${head}${JSON.stringify(values)}}`)
}

/** The sort values a cursor holds, or null when it is malformed or made for another list. */
export function decodeCursor(type: string, sort: readonly SortKey[], cursor: string): CursorValues | null {
  let payload: unknown
  try {
    payload = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    return null
  }
  if (typeof payload !== 'object' || payload === null) return null
  const { t, s, v } = payload as Partial<CursorPayload>
  if (t !== type || s !== sortSpec(sort) || !Array.isArray(v) || v.length !== sort.length) return null
  const fits = sort.every((key, i) => (key.field === 'id' ? Number.isSafeInteger(v[i]) : typeof v[i] === 'string'))
  return fits ? v : null
}
