import type { ResourceDescription } from '../resources/description'

/** Record ids are integers assigned by the store. */
export type Id = number

/** One stored record: attribute values and the ids its to-one relationships point at. */
export interface StoredRecord {
  readonly id: Id
  readonly attributes: Readonly<Record<string, string>>
  readonly toOne: Readonly<Record<string, Id | null>>
}

/** The fields a write sets; absent keys are left as they are (update) or take defaults (create). */
export interface RecordInput {
  readonly attributes: Readonly<Record<string, string>>
  /** A relationship name mapped to the target id, or null to clear it. */
  readonly toOne: Readonly<Record<string, Id | null>>
}

/** Equality on to-one relationships: `{ author: 3 }` lists the books of author 3. */
export type ListFilter = Readonly<Record<string, Id>>

export interface ListPage {
  /** Only records with a greater id: the list is read in id order, a batch at a time. */
  readonly afterId: Id
  readonly limit: number
}

/** A record and, for each relationship asked for, the records on its other side. */
export interface RecordWithRelated {
  readonly record: StoredRecord
  readonly related: Readonly<Record<string, readonly StoredRecord[]>>
}

export type WriteResult =
  | { readonly ok: true; readonly record: StoredRecord }
  /** Names of the to-one relationships whose target does not exist (required ones given as null too). */
  | { readonly ok: false; readonly missing: readonly string[] }

export type DeleteResult =
  | { readonly status: 'deleted' }
  | { readonly status: 'not-found' }
  /** Other records still point at this one through a relationship that forbids deleting it. */
  | { readonly status: 'restricted'; readonly by: ResourceDescription; readonly count: number }

/**
 * The one storage interface. Every backend implements it; nothing outside src/store knows which
 * database is in use. Each write runs in a single transaction.
 */
export interface Store {
  list(resource: ResourceDescription, filter: ListFilter, page: ListPage): Promise<StoredRecord[]>
  find(resource: ResourceDescription, id: Id): Promise<StoredRecord | null>
  /** The records on the other side of a to-many relationship of record `id`, in id order. */
  findRelated(resource: ResourceDescription, id: Id, relationship: string): Promise<StoredRecord[]>
  /** A record with the related records of the named relationships, read as one consistent snapshot. */
  findWithRelated(
    resource: ResourceDescription,
    id: Id,
    relationships: readonly string[],
  ): Promise<RecordWithRelated | null>
  /** Which of these to-one references point at nothing (read-only; used to report all errors at once). */
  missingReferences(resource: ResourceDescription, toOne: RecordInput['toOne']): Promise<string[]>
  create(resource: ResourceDescription, input: RecordInput): Promise<WriteResult>
  /** Null when no record has that id. */
  update(resource: ResourceDescription, id: Id, input: RecordInput): Promise<WriteResult | null>
  delete(resource: ResourceDescription, id: Id): Promise<DeleteResult>
  close(): Promise<void>
}
