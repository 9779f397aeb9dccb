/** Record ids are integers assigned by the store. */
export type Id = number

/** One stored record: attribute values and the ids its to-one relationships point at. */
export interface StoredRecord {
  readonly id: Id
  readonly attributes: Readonly<Record<string, string>>
  readonly toOne: Readonly<Record<string, Id | null>>
}
