import type { Id } from '../../model/record'

/** Ids below this are kept as bits: 2 MiB at most, however many. */
const BITMAP_LIMIT = 1 << 24

/**
 * A set of record ids, as a bitmap that grows to the largest id seen (ids are small positive
 * integers handed out in order), with a Set for any beyond BITMAP_LIMIT. A document that writes
 * 100,000 books remembers them in 12.5 KB instead of the megabytes, and the garbage, of a Set.
 */
export class IdSet {
  // Empty until the first id: most sets of a short document stay empty.
  private bits = new Uint8Array(0)
  private large: Set<Id> | null = null

  has(id: Id): boolean {
    if (id >= BITMAP_LIMIT) return this.large?.has(id) ?? false
    const byte = id >>> 3
    return byte < this.bits.length && ((this.bits[byte] as number) & (1 << (id & 7))) !== 0
  }

  add(id: Id): void {
    if (id >= BITMAP_LIMIT) {
      this.large ??= new Set()
      this.large.add(id)
      return
    }
    const byte = id >>> 3
    if (byte >= this.bits.length) {
      let size = Math.max(this.bits.length, 1024)
      while (size <= byte) size *= 2
      const grown = new Uint8Array(size)
      grown.set(this.bits)
      this.bits = grown
    }
    this.bits[byte] = (this.bits[byte] as number) | (1 << (id & 7))
  }

  /**
   * The ids in ascending order, in batches of `size`, leaving out those `skip` holds: a set stands
   * for a sorted list of ids without holding one (100,000 ids: 12.5 KB, not an 800 KB array
   * sorted and copied). A batch at a time: a generator's step per id would leave an object behind.
   */
  *batches(size: number, skip?: IdSet): Generator<Id[]> {
    let batch: Id[] = []
    const bits = this.bits
    for (let byte = 0; byte < bits.length; byte++) {
      const value = bits[byte] as number
      if (value === 0) continue
      for (let bit = 0; bit < 8; bit++) {
        const id = byte * 8 + bit
        if ((value & (1 << bit)) === 0 || skip?.has(id)) continue
        batch.push(id)
        if (batch.length === size) {
          yield batch
          batch = []
        }
      }
    }
    for (const id of this.large ? [...this.large].sort((a, b) => a - b) : []) {
      if (skip?.has(id)) continue
      batch.push(id)
      if (batch.length === size) {
        yield batch
        batch = []
      }
    }
    if (batch.length > 0) yield batch
  }
}
