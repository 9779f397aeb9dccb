import type { ResourceDescription } from '../../model/description'

/**
 * What a migration changes, in the descriptions' terms. Each dialect turns these into its SQL
 * (src/store/sqlite/ddl.ts, src/store/postgres/ddl.ts) with the same generator that writes a
 * type's whole schema and that the start-up check compares the database with.
 */
export type SchemaChange =
  /** A type's table with everything the generator writes for it: keys, indexes, search, counters. */
  | { readonly kind: 'create-type'; readonly resource: ResourceDescription }
  /** An optional to-one relationship added to a type that exists: its column, foreign key and indexes. */
  | { readonly kind: 'add-to-one'; readonly resource: ResourceDescription; readonly relationship: string }
  /** An index on columns of a type's table, in this order. */
  | {
      readonly kind: 'add-index'
      readonly resource: ResourceDescription
      readonly name: string
      readonly columns: readonly string[]
    }
  /** Hand-written SQL, for what the descriptions cannot say (moving data, a one-off fix). */
  | { readonly kind: 'sql'; readonly sqlite: string; readonly postgres: string }
  /**
   * The change feed: its tables, and on every type there is then the triggers that record each
   * write; every type created after it gets them with its table (src/store/change-log.ts).
   */
  | { readonly kind: 'change-feed' }
  /**
   * The history the change feed's positions belong to, kept beside its horizon: a database whose
   * history is not the one stored (restored, copied, re-created, promoted) starts its feed over.
   */
  | { readonly kind: 'feed-history' }
  /**
   * The vocabulary of every searched type there is then (the words its searched attributes hold,
   * for the typos a search forgives: src/store/search-typos.ts), filled from the rows; every type
   * created after it gets its own with its table.
   */
  | { readonly kind: 'search-vocabulary' }
  /**
   * The page totals kept for the records alone, no longer for the words of each record (which
   * nothing reads); on PostgreSQL, search_totals' statement and flush triggers of every searched
   * type. Each type created after it gets the records' triggers with its table.
   */
  | { readonly kind: 'record-totals' }
  /**
   * On PostgreSQL, a write's triggers merged (src/store/postgres/merged-triggers-ddl.ts): the feed's
   * row trigger counts the records, one deferred trigger counts the commit and writes the totals.
   * Each type created after it gets them with its table. SQLite has nothing to change.
   */
  | { readonly kind: 'merged-triggers' }
  /**
   * On PostgreSQL, the vocabularies without a unique key (src/store/postgres/vocabulary-ddl.ts): a
   * word is added where no committed row holds it, so that two writers adding the same new words
   * never wait for each other. SQLite, one writer at a time, keeps its key.
   */
  | { readonly kind: 'unkeyed-vocabularies' }

export function createType(resource: ResourceDescription): SchemaChange {
  return { kind: 'create-type', resource }
}

export function addToOne(resource: ResourceDescription, relationship: string): SchemaChange {
  return { kind: 'add-to-one', resource, relationship }
}

export function addIndex(resource: ResourceDescription, name: string, columns: readonly string[]): SchemaChange {
  return { kind: 'add-index', resource, name, columns }
}

export function changeFeed(): SchemaChange {
  return { kind: 'change-feed' }
}

export function feedHistory(): SchemaChange {
  return { kind: 'feed-history' }
}

export function searchVocabulary(): SchemaChange {
  return { kind: 'search-vocabulary' }
}

export function recordTotals(): SchemaChange {
  return { kind: 'record-totals' }
}

export function mergedTriggers(): SchemaChange {
  return { kind: 'merged-triggers' }
}

export function unkeyedVocabularies(): SchemaChange {
  return { kind: 'unkeyed-vocabularies' }
}

export function handSql(sql: { readonly sqlite: string; readonly postgres: string }): SchemaChange {
  return { kind: 'sql', ...sql }
}

/**
 * A migration written once for both backends, in the descriptions' terms. The backends' own
 * histories (SQLite's 7 migrations, PostgreSQL's 9) came first; each takes the shared ones after
 * its own, numbered on from its last.
 */
export interface SharedMigration {
  readonly name: string
  readonly changes: readonly SchemaChange[]
}

/** The key of a to-one relationship in SchemaState: `books.publisher`. */
function toOneKey(type: string, relationship: string): string {
  return `${type}.${relationship}`
}

/**
 * The types a migration finds, as each stood then: the descriptions as they are now, less the
 * to-one relationships a later `addToOne` adds (so that `createType(books)` in migration 1 does not
 * write a column migration 8 adds), and without to-many relationships, which the schema does not hold.
 */
export class SchemaState {
  private readonly types = new Map<string, ResourceDescription>()
  private readonly later: Set<string>
  /** Whether the change feed's tables exist: a type created from then on records its changes. */
  feed = false
  /** Whether the search vocabularies exist: a searched type created from then on has its own. */
  vocabulary = false
  /** Whether the page totals count records alone (`recordTotals`): a type created from then on is counted so. */
  recordTotals = false
  /** Whether a write's triggers are merged (`mergedTriggers`): a type created from then on gets them so. */
  mergedTriggers = false
  /** Whether the vocabularies have no unique key on PostgreSQL (`unkeyedVocabularies`): a type created from then on has none. */
  unkeyedVocabularies = false

  /** `changes`: every change of the migrations to come, to know which to-ones are added later. */
  constructor(changes: readonly SchemaChange[]) {
    this.later = new Set(
      changes.flatMap((c) => (c.kind === 'add-to-one' ? [toOneKey(c.resource.type, c.relationship)] : [])),
    )
  }

  /** The types created so far, in the order they were. */
  get all(): ResourceDescription[] {
    return [...this.types.values()]
  }

  get(type: string): ResourceDescription {
    const found = this.types.get(type)
    if (!found) throw new Error(`no migration creates ${type} before it is used`)
    return found
  }

  has(type: string): boolean {
    return this.types.has(type)
  }

  /** Applies a change; returns the type as it stands after it (for the dialect to write). */
  apply(change: SchemaChange): ResourceDescription | undefined {
    if (change.kind === 'sql') return undefined
    if (change.kind === 'feed-history') {
      if (!this.feed) throw new Error("the change feed's history comes before the change feed")
      return undefined
    }
    if (change.kind === 'search-vocabulary') {
      if (this.vocabulary) throw new Error('the search vocabularies are created twice')
      this.vocabulary = true
      return undefined
    }
    if (change.kind === 'record-totals') {
      if (this.recordTotals) throw new Error('the totals are made records alone twice')
      this.recordTotals = true
      return undefined
    }
    if (change.kind === 'merged-triggers') {
      if (this.mergedTriggers) throw new Error("a write's triggers are merged twice")
      if (!this.feed || !this.recordTotals || !this.vocabulary) {
        throw new Error("a write's triggers are merged after the feed, the record totals and the vocabularies")
      }
      this.mergedTriggers = true
      return undefined
    }
    if (change.kind === 'unkeyed-vocabularies') {
      if (this.unkeyedVocabularies) throw new Error('the vocabularies lose their key twice')
      if (!this.vocabulary) throw new Error('the vocabularies lose their key after they are created')
      this.unkeyedVocabularies = true
      return undefined
    }
    if (change.kind === 'change-feed') {
      if (this.feed) throw new Error('the change feed is created twice')
      this.feed = true
      return undefined
    }
    const type = change.resource.type
    if (change.kind === 'create-type') {
      if (this.types.has(type)) throw new Error(`${type} is created twice`)
      this.types.set(type, this.asOfNow(change.resource))
    } else if (change.kind === 'add-to-one') {
      const relationship = change.resource.relationships[change.relationship]
      if (relationship?.kind !== 'to-one') throw new Error(`${type}.${change.relationship} is no to-one relationship`)
      if (relationship.required) {
        throw new Error(`${type}.${change.relationship} is required: the rows that exist would have none`)
      }
      this.get(type)
      this.later.delete(toOneKey(type, change.relationship))
      this.types.set(type, this.asOfNow(change.resource))
    } else {
      this.get(type)
    }
    return this.types.get(type)
  }

  private asOfNow(resource: ResourceDescription): ResourceDescription {
    const present = (name: string) => !this.later.has(toOneKey(resource.type, name))
    const relationships = Object.fromEntries(
      Object.entries(resource.relationships).filter(([name, r]) => r.kind === 'to-one' && present(name)),
    )
    for (const filter of Object.values(resource.filters)) {
      const searched = filter.kind === 'search' ? filter.fields : []
      if (searched.some((f) => 'relationship' in f && !present(f.relationship))) {
        throw new Error(`${resource.type} searches a relationship a later migration adds: not supported yet`)
      }
    }
    const filters = Object.fromEntries(
      Object.entries(resource.filters).filter(([, f]) => f.kind !== 'relationship' || present(f.relationship)),
    )
    return { ...resource, relationships, filters }
  }
}
