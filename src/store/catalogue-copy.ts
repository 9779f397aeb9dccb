import type { ResourceDescription } from '../model/description'
import type { Id, StoredRecord } from '../model/record'

/**
 * The whole catalogue read at one moment and written back with its ids: what `catalogue export`
 * and the import of an export use (Store.openSnapshot, Store.openRestore). Each backend implements
 * them with its own SQL, driven by the resource descriptions: a new type needs no code here.
 */

/** What a type holds: its records, and the highest id ever handed out to one (deleted records' too). */
export interface TypeTally {
  readonly records: number
  readonly lastId: Id
}

/**
 * The catalogue as it was at one moment: one read transaction (SQLite's WAL snapshot, PostgreSQL's
 * REPEATABLE READ), so that every reference in it points at a record of the same moment, whatever
 * the service writes meanwhile. Read a batch at a time: memory stays bounded. While it is open the
 * database keeps the rows it shows (SQLite's WAL cannot be checkpointed past it): close it.
 */
export interface CatalogueSnapshot {
  tally(resource: ResourceDescription): Promise<TypeTally>
  /** The records of a type in id order, at most `size` at a time. */
  records(resource: ResourceDescription, size: number): AsyncIterable<readonly StoredRecord[]>
  close(): Promise<void>
}

/** How many records each type holds. */
export type Holdings = ReadonlyMap<ResourceDescription, number>

/** What a batch of a restore did. */
export type RestoreOutcome =
  | {
      readonly ok: true
      /** Stored with their ids. */
      readonly added: number
      /** Stored already under the same id with the same fields: left as they are. */
      readonly present: number
    }
  /** These ids are stored with other fields: nothing of the batch was stored. */
  | { readonly ok: false; readonly conflicts: readonly Id[] }

/**
 * Records written with the ids they had (an export restored). A record whose id is stored already
 * counts as present when its fields are the same, and as a conflict when they differ; the others
 * are stored as they are, relationships included (the caller checks that each reference names a
 * record restored before it).
 */
export interface CatalogueRestore {
  /** How many records each type holds now, read at one moment. */
  holdings(): Promise<Holdings>
  /**
   * Starts the restore in one transaction. With `requireEmpty`, a catalogue that holds any record
   * is left as it is and its holdings are returned. Otherwise each type's id counter is raised to
   * at least `lastIds`' (null is returned): from then on the service hands out only ids above those
   * of the file, deleted records' included, and never one that a restored record could take.
   */
  begin(lastIds: ReadonlyMap<ResourceDescription, Id>, requireEmpty: boolean): Promise<Holdings | null>
  /** Reads only: of these records, how many are stored the same, and the ids stored with other fields. */
  compare(
    resource: ResourceDescription,
    records: readonly StoredRecord[],
  ): Promise<{ readonly present: number; readonly conflicts: readonly Id[] }>
  /** In one transaction: stores those of the records whose ids are free, unless one is a conflict. */
  add(resource: ResourceDescription, records: readonly StoredRecord[]): Promise<RestoreOutcome>
  close(): Promise<void>
}

/** Whether two records of one type hold the same fields. */
export function sameRecord(a: StoredRecord, b: StoredRecord): boolean {
  if (a.id !== b.id) return false
  for (const [name, value] of Object.entries(a.attributes)) if (b.attributes[name] !== value) return false
  for (const [name, id] of Object.entries(a.toOne)) if ((b.toOne[name] ?? null) !== id) return false
  return Object.keys(b.attributes).length === Object.keys(a.attributes).length
}

/** Splits stored records into those like `wanted` (present) and the ids of those unlike it (conflicts). */
export function compareStored(
  wanted: readonly StoredRecord[],
  stored: readonly StoredRecord[],
): { present: number; conflicts: Id[]; free: StoredRecord[] } {
  const byId = new Map(stored.map((record) => [record.id, record]))
  let present = 0
  const conflicts: Id[] = []
  const free: StoredRecord[] = []
  for (const record of wanted) {
    const found = byId.get(record.id)
    if (!found) free.push(record)
    else if (sameRecord(record, found)) present++
    else conflicts.push(record.id)
  }
  return { present, conflicts, free }
}

/**
 * A type's records in id order, `size` at a time (CatalogueSnapshot.records): `page` reads at most
 * `size` records with ids above `after`; a page shorter than `size` is the last.
 */
export async function* pagesById(
  size: number,
  page: (after: Id, size: number) => Promise<readonly StoredRecord[]>,
): AsyncGenerator<readonly StoredRecord[]> {
  let after = 0
  for (;;) {
    const batch = await page(after, size)
    if (batch.length > 0) yield batch
    const last = batch.at(-1)
    if (!last || batch.length < size) return
    after = last.id
  }
}
