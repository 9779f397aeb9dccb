import type { ReadArgs, ReadMethod, ReadResult } from './sqlite-read-calls'
import type { FlatValue, Table } from './sqlite-table'
import type { Members, StoredRecord } from './store'

/**
 * What a read returns, as it crosses from a worker: records and linkage as flat arrays of
 * primitives. Structured cloning 1,000 records as objects costs several times what one flat array
 * of their values costs, and a long list crosses in a hundred such batches.
 */
export type Encoded = { readonly flat: FlatValue[]; readonly total?: number } | { readonly ids: number[] }

type Tables = (type: string) => Table

function flatten(table: Table, records: readonly StoredRecord[]): FlatValue[] {
  const flat: FlatValue[] = []
  for (const record of records) table.pushFlat(record, flat)
  return flat
}

export function encodeResult<M extends ReadMethod>(
  tables: Tables,
  method: M,
  args: ReadArgs<M>,
  value: ReadResult<M>,
): Encoded {
  const table = tables(args[0])
  switch (method) {
    case 'list':
    case 'findMany':
      return { flat: flatten(table, value as StoredRecord[]) }
    case 'page': {
      const page = value as ReadResult<'page'>
      return { flat: flatten(table, page.records), total: page.total }
    }
    case 'members': {
      const flat: FlatValue[] = []
      for (const [owner, ids] of value as Members) for (const id of ids) flat.push(owner, id)
      return { flat }
    }
    default:
      return { ids: value as number[] }
  }
}

export function decodeResult<M extends ReadMethod>(
  tables: Tables,
  method: M,
  args: ReadArgs<M>,
  encoded: Encoded,
): ReadResult<M> {
  if ('ids' in encoded) return encoded.ids as ReadResult<M>
  const table = tables(args[0])
  switch (method) {
    case 'list':
    case 'findMany':
      return table.fromFlat(encoded.flat) as ReadResult<M>
    case 'page':
      return { records: table.fromFlat(encoded.flat), total: encoded.total ?? 0 } as ReadResult<M>
    default: {
      const members: Members = new Map()
      const { flat } = encoded
      for (let i = 0; i < flat.length; i += 2) {
        const owner = flat[i] as number
        const ids = members.get(owner)
        if (ids) ids.push(flat[i + 1] as number)
        else members.set(owner, [flat[i + 1] as number])
      }
      return members as ReadResult<M>
    }
  }
}
