import { describe, expect, it } from 'bun:test'
import { cursorEncoder, decodeCursor, encodeCursor } from '../../src/jsonapi/cursor'
import type { SortKey } from '../../src/model/query'

const byName: SortKey[] = [
  { field: 'name', descending: true },
  { field: 'id', descending: true },
]

describe('cursorEncoder', () => {
  const names = [
    'Plain',
    'Émile 📚',
    'Quote " and \\ backslash',
    '\u0000\u2028',
    'é'.repeat(1000),
    '📚'.repeat(1000),
    'x',
  ]
  it('writes base64url of the JSON payload, for any name, long and multibyte ones included', () => {
    const encode = cursorEncoder('books', byName)
    for (const [i, name] of names.entries()) {
      const cursor = encode([name, i + 1])
      const payload = JSON.stringify({ t: 'books', s: '-name,-id', v: [name, i + 1] })
      expect(cursor).toBe(Buffer.from(payload).toString('base64url'))
      expect(cursor).toBe(encodeCursor('books', byName, [name, i + 1]))
      expect(decodeCursor('books', byName, cursor)).toEqual([name, i + 1])
    }
  })

  it('writes the same for every sort and type, whatever length of head and values is left over', () => {
    const sorts: SortKey[][] = [
      [{ field: 'id', descending: false }],
      [{ field: 'id', descending: true }],
      byName,
      [
        { field: 'name', descending: false },
        { field: 'id', descending: false },
      ],
    ]
    for (const type of ['books', 'authors', 'book_collections']) {
      for (const sort of sorts) {
        const encode = cursorEncoder(type, sort)
        for (const id of [1, 12, 123, 1234, 99999, Number.MAX_SAFE_INTEGER]) {
          const values = sort.length === 1 ? [id] : [`Name ${id}`, id]
          const spec = sort.map((k) => (k.descending ? `-${k.field}` : k.field)).join(',')
          const payload = JSON.stringify({ t: type, s: spec, v: values })
          expect(encode(values)).toBe(Buffer.from(payload).toString('base64url'))
        }
      }
    }
  })

  it('makes cursors that fit only the type and the sort they were made for', () => {
    const cursor = encodeCursor('books', byName, ['Mort', 4])
    expect(decodeCursor('authors', byName, cursor)).toBeNull()
    expect(decodeCursor('books', [{ field: 'id', descending: false }], cursor)).toBeNull()
  })
})
