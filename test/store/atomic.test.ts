import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AtomicOperation, AtomicOutcome } from '../../src/model/writes'
import { resources } from '../../src/resources/registry'
import { AtomicAbort, runAtomicAsync, type TransactionWriter } from '../../src/store/atomic'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import type { Store } from '../../src/store/store'

const authors = resources.get('authors')
const books = resources.get('books')

let dir: string
let stores: SqliteStore[]

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'catalogue-atomic-'))
  stores = []
})

afterEach(async () => {
  for (const store of stores) await store.close()
  rmSync(dir, { recursive: true, force: true })
})

function open(name: string): SqliteStore {
  const store = SqliteStore.open(join(dir, `${name}.db`), resources)
  stores.push(store)
  return store
}

/**
 * An asynchronous writer over a store's own writes: each step awaited, as a backend with a pooled
 * client awaits each statement of its transaction (here each step commits alone: this checks the
 * runner, not the transaction).
 */
function writerOver(store: Store): TransactionWriter {
  return {
    create: (resource, input) => store.create(resource, input),
    update: (resource, id, input) => store.update(resource, id, input),
    delete: (resource, id) => store.delete(resource, id),
    changeToMany: ({ resource, id, relationship, ids, change }) =>
      store.changeToMany(resource, id, relationship, ids, change),
    read: async (target) => {
      if (target.kind === 'record') return store.find(target.resource, target.id)
      if (!(await store.find(target.resource, target.id))) return null
      return (await store.members(target.resource, target.relationship, [target.id])).get(target.id) ?? []
    },
  }
}

/** What runAtomicAsync gives, in the shape of Store.atomic's outcome. */
async function runAsync(store: Store, operations: readonly AtomicOperation[]): Promise<AtomicOutcome> {
  try {
    const results = await runAtomicAsync(operations, writerOver(store))
    if (results === 'stale') throw new Error('an unconditional batch was refused as stale')
    return { ok: true, results }
  } catch (error) {
    if (error instanceof AtomicAbort) return { ok: false, index: error.index, failure: error.failure }
    throw error
  }
}

const batch: AtomicOperation[] = [
  { kind: 'create', resource: authors, lid: 'a', input: { attributes: { name: 'Ann' }, toOne: {} } },
  {
    kind: 'create',
    resource: books,
    lid: 'b',
    input: { attributes: { name: 'One' }, toOne: { author: { lid: 'a' } } },
  },
  { kind: 'update', resource: books, target: { lid: 'b' }, input: { attributes: { name: 'Two' }, toOne: {} } },
  {
    kind: 'to-many',
    resource: authors,
    target: { lid: 'a' },
    relationship: 'books',
    members: [{ lid: 'b' }],
    change: 'add',
  },
]

describe('runAtomicAsync', () => {
  it('gives the results the synchronous runner gives inside SqliteStore.atomic, step by step awaited', async () => {
    const outcome = await open('sync').atomic(batch)
    expect(outcome.ok).toBe(true)
    expect(await runAsync(open('async'), batch)).toEqual(outcome)
  })

  it('stops at the first failure with its index, as the synchronous runner does', async () => {
    const failing: AtomicOperation[] = [
      ...batch.slice(0, 2),
      { kind: 'delete', resource: authors, target: { lid: 'a' } },
      { kind: 'delete', resource: books, target: { lid: 'b' } },
    ]
    const outcome = await open('sync').atomic(failing)
    expect(outcome).toEqual({ ok: false, index: 2, failure: { kind: 'restricted', id: 1, by: books, count: 1 } })
    expect(await runAsync(open('async'), failing)).toEqual(outcome)
  })
})
