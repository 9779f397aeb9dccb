import type { ResourceDescription } from '../../model/description'
import { searchOf } from '../../resources/registry'

/**
 * The functions that keep search_totals (what FTS5's bm25 reads from its index besides the row:
 * the rows of a table and the words of all of them), written from the descriptions: the words a
 * row adds, and the flush at the commit of every searched table's pending sums. The start-up
 * check (schema.ts) compares the database's bodies with these.
 */

export interface PostgresFunction {
  readonly name: string
  /** The body as PostgreSQL keeps it (pg_proc.prosrc), between its dollar quotes. */
  readonly body: string
  readonly sql: string
}

/** A PL/pgSQL trigger function `name()` with `body` between the dollar quotes `$tag$`. */
export function triggerFunction(name: string, tag: string, body: string): PostgresFunction {
  return {
    name,
    body,
    sql: `CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $${tag}$${body}$${tag}$;`,
  }
}

/**
 * The words a row adds to its table's total: the words of each searched attribute, one for each
 * searched related record (FTS5 indexes its id as one token), none when an optional one is absent.
 */
export function rowWords(resource: ResourceDescription): string | undefined {
  const search = searchOf(resource)
  if (!search) return undefined
  return search.fields
    .map((field) => {
      if ('attribute' in field) {
        return `cardinality(search_words(${resource.attributes[field.attribute]?.column ?? field.attribute}))`
      }
      const relationship = resource.relationships[field.relationship]
      if (relationship?.kind !== 'to-one') throw new Error(`${resource.type}.${field.relationship} is not to-one`)
      return relationship.required ? '1' : `(${relationship.column} IS NOT NULL)::int`
    })
    .join(' + ')
}

/**
 * The prefix of a type's word functions: the searched column's when a type searches one attribute
 * and nothing else (the types that search their `name` share `name_words_*`), else its singular.
 */
export function wordsKind(resource: ResourceDescription): string {
  const fields = searchOf(resource)?.fields ?? []
  const only = fields.length === 1 ? fields[0] : undefined
  if (only && 'attribute' in only) return resource.attributes[only.attribute]?.column ?? only.attribute
  return resource.singular
}

export const wordChanges = ['added', 'removed', 'changed'] as const

/** A statement's rows added, removed and changed, summed from its transition tables and pended. */
export function wordFunctions(resource: ResourceDescription): PostgresFunction[] {
  const words = rowWords(resource)
  if (!words) return []
  const sum = `COALESCE(SUM(${words}), 0)`
  const bodies = {
    added: `pend_search_totals(TG_TABLE_NAME, COUNT(*), ${sum}) FROM new_rows`,
    removed: `pend_search_totals(TG_TABLE_NAME, -COUNT(*), -${sum}) FROM old_rows`,
    changed: `pend_search_totals(TG_TABLE_NAME, 0, (SELECT ${sum} FROM new_rows) - (SELECT ${sum} FROM old_rows))`,
  }
  return wordChanges.map((change) => {
    const name = `${wordsKind(resource)}_words_${change}`
    const body = `
      BEGIN
        PERFORM ${bodies[change]};
        RETURN NULL;
      END
      `
    return triggerFunction(name, change, body)
  })
}

/** At the commit, once a transaction: the pending sums of every searched table into this backend's slots. */
export function flushFunction(resources: readonly ResourceDescription[]): PostgresFunction {
  const tables = resources.filter((r) => searchOf(r)).map((r) => `'${r.table}'`)
  const body = `
      DECLARE
        tbl text;
        pending text;
      BEGIN
        FOREACH tbl IN ARRAY ARRAY[${tables.join(', ')}] LOOP
          pending := pg_catalog.current_setting('catalogue.search_pending_' || tbl, true);
          IF pending IS NOT NULL AND pending <> '' THEN
            PERFORM pg_catalog.set_config('catalogue.search_pending_' || tbl, '', true);
            IF pending <> '0 0' THEN
              UPDATE search_totals
                SET records = records + pg_catalog.split_part(pending, ' ', 1)::bigint,
                  words = words + pg_catalog.split_part(pending, ' ', 2)::bigint
                WHERE table_name = tbl AND slot = pg_catalog.pg_backend_pid() % 8;
            END IF;
          END IF;
        END LOOP;
        RETURN NULL;
      END
      `
  const name = 'flush_search_totals'
  return triggerFunction(name, 'flush', body)
}
