import { describe, expect, it } from 'bun:test'
import {
  BatchSizer,
  IMPORT_BATCH_SIZE,
  LOCK_BUDGET_MS,
  MAX_IMPORT_BATCH_SIZE,
  nextBatchSize,
} from '../../src/store/import-batches'

describe('the size of an import batch', () => {
  it(`is ${IMPORT_BATCH_SIZE} books while the table holds up to twenty times as many`, () => {
    expect(nextBatchSize(0)).toBe(IMPORT_BATCH_SIZE)
    expect(nextBatchSize(20 * IMPORT_BATCH_SIZE)).toBe(IMPORT_BATCH_SIZE)
  })

  it(`grows to a twentieth of the books stored, up to ${MAX_IMPORT_BATCH_SIZE}`, () => {
    expect(nextBatchSize(300_000)).toBe(15_000)
    expect(nextBatchSize(500_000)).toBe(MAX_IMPORT_BATCH_SIZE)
    expect(nextBatchSize(1_000_000)).toBe(MAX_IMPORT_BATCH_SIZE)
    expect(nextBatchSize(50_000_000)).toBe(MAX_IMPORT_BATCH_SIZE)
  })

  it(`holds what the last batch's pace stores in ${LOCK_BUDGET_MS} ms, never fewer than ${IMPORT_BATCH_SIZE}`, () => {
    // A fast batch leaves the table's share as it is; a slow one shrinks the next in proportion.
    expect(nextBatchSize(1_000_000, { books: 10_000, ms: 200 })).toBe(MAX_IMPORT_BATCH_SIZE)
    expect(nextBatchSize(1_000_000, { books: 24_000, ms: 2 * LOCK_BUDGET_MS })).toBe(12_000)
    expect(nextBatchSize(1_000_000, { books: 24_000, ms: 60 * LOCK_BUDGET_MS })).toBe(IMPORT_BATCH_SIZE)
  })

  it('follows the books counted when the import began and those it added since', () => {
    const sizer = new BatchSizer()
    expect(sizer.size).toBe(IMPORT_BATCH_SIZE)
    sizer.counted(300_000)
    sizer.done(5000, 100, 5000)
    // Counted once: a later count is the same table seen again.
    sizer.counted(0)
    expect(sizer.size).toBe(15_250)
    sizer.done(15_250, 100, 15_250)
    expect(sizer.size).toBe(16_012)
  })
})
