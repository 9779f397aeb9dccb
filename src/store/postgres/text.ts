/**
 * PostgreSQL's text cannot hold U+0000, which a client may send and SQLite stores. Text goes in
 * with U+0000 written as U+0001 U+0001 and U+0001 as U+0001 U+0002, and comes out decoded. The
 * encoding keeps byte order (U+0000 < U+0001 < anything else, and a prefix stays a prefix), so
 * names sort and keyset pages continue exactly as over SQLite; both stay word separators for search.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these control characters are the point
const escaped = /[\u0000\u0001]/g
// biome-ignore lint/suspicious/noControlCharactersInRegex: these control characters are the point
const encoded = /\u0001[\u0001\u0002]/g

export function encodeText(text: string): string {
  if (!text.includes('\u0000') && !text.includes('\u0001')) return text
  return text.replace(escaped, (c) => (c === '\u0000' ? '\u0001\u0001' : '\u0001\u0002'))
}

export function decodeText(text: string): string {
  return text.includes('\u0001')
    ? text.replace(encoded, (pair) => (pair === '\u0001\u0001' ? '\u0000' : '\u0001'))
    : text
}
