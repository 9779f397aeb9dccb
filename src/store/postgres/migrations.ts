import type { SQL } from 'bun'
import { resources } from '../../resources/registry'
import { searchColumnsSql } from './search-columns'

/**
 * Versioned schema migrations for the PostgreSQL store, the same schema as the SQLite store's
 * (src/store/sqlite/migrations.ts) in PostgreSQL's terms. A migration, once released, is never
 * edited: add a new one instead.
 */
export interface PostgresMigration {
  readonly version: number
  readonly name: string
  readonly sql: string
}

/** Migration 5: the words a row adds to its table's search total, by kind of table. */
const rowWords = {
  name: 'cardinality(search_words(name))',
  book: 'cardinality(search_words(name)) + 1 + (book_collection_id IS NOT NULL)::int',
} as const
const searchedTables = [
  ['authors', 'name'],
  ['book_collections', 'name'],
  ['books', 'book'],
] as const

/** Per kind, the statement triggers' functions: a statement's rows added, removed and changed, pended. */
const searchTotalFunctions = (Object.keys(rowWords) as (keyof typeof rowWords)[])
  .flatMap((kind) => {
    const sum = `COALESCE(SUM(${rowWords[kind]}), 0)`
    const fn = (
      change: string,
      body: string,
    ) => `CREATE FUNCTION ${kind}_words_${change}() RETURNS trigger LANGUAGE plpgsql AS $${change}$
      BEGIN
        PERFORM ${body};
        RETURN NULL;
      END
      $${change}$;`
    return [
      fn('added', `pend_search_totals(TG_TABLE_NAME, COUNT(*), ${sum}) FROM new_rows`),
      fn('removed', `pend_search_totals(TG_TABLE_NAME, -COUNT(*), -${sum}) FROM old_rows`),
      fn(
        'changed',
        `pend_search_totals(TG_TABLE_NAME, 0, (SELECT ${sum} FROM new_rows) - (SELECT ${sum} FROM old_rows))`,
      ),
    ]
  })
  .join('\n      ')

/** Per searched table: its three statement triggers, then the deferred one that writes the sums at the commit. */
const searchTotalTriggers = [
  ...searchedTables.flatMap(([table, kind]) => [
    `CREATE TRIGGER ${table}_search_added AFTER INSERT ON ${table} REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION ${kind}_words_added();`,
    `CREATE TRIGGER ${table}_search_removed AFTER DELETE ON ${table} REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION ${kind}_words_removed();`,
    `CREATE TRIGGER ${table}_search_changed AFTER UPDATE ON ${table}
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${kind}_words_changed();`,
  ]),
  ...searchedTables.map(
    ([table]) => `CREATE CONSTRAINT TRIGGER ${table}_search_totals AFTER INSERT OR UPDATE OR DELETE ON ${table}
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION flush_search_totals();`,
  ),
].join('\n      ')

export const postgresMigrations: readonly PostgresMigration[] = [
  {
    version: 1,
    name: 'authors, book collections and books, with name and search indexes',
    // Ids come from record_ids, one counter row per table, moved in the inserting transaction: a
    // deleted record's id is never handed out again, and a write rolled back (an atomic batch that
    // failed) gives its ids back, as SQLite's AUTOINCREMENT does; a sequence would leave a gap that
    // tells the backends apart. Inserts into one table thus commit one after the other, as SQLite's do.
    // COLLATE "C": names compare byte by byte, as SQLite's BINARY does, so lists sort the same.
    // search_vector() and search_prefix() split words and fold case and accents as the SQLite index
    // does (unicode61 remove_diacritics); unaccent also expands ß, Œ, Æ and ligatures (ss, oe, ae).
    // An expression index needs IMMUTABLE functions, and unaccent() is only STABLE (its rules file
    // could change: then REINDEX), so they are wrapped, naming unaccent's schema outright so that
    // they do not depend on the search_path of whoever calls them.
    sql: `
      CREATE EXTENSION IF NOT EXISTS unaccent;
      DO $migration$
      DECLARE
        ext text;
      BEGIN
        SELECT quote_ident(n.nspname) INTO ext FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
          WHERE e.extname = 'unaccent';
        -- The words as the SQLite index splits them: runs of letters and digits (ICU's classes,
        -- whatever the database's own locale), accents removed, lower-cased; each word as it is, not
        -- run through the text search parser (which keeps "foo.bar" or an e-mail address whole).
        EXECUTE format(
          'CREATE FUNCTION search_words(text) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS %L',
          format($words$SELECT pg_catalog.array_remove(pg_catalog.regexp_split_to_array(pg_catalog.lower(%s.unaccent('%s.unaccent'::regdictionary, $1) COLLATE "und-x-icu"), '[^[:alnum:]]+'), '')$words$, ext, ext));
        CREATE FUNCTION search_vector(text) RETURNS tsvector LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
          RETURN pg_catalog.array_to_tsvector(search_words($1));
        -- A word of a search (letters and digits only) as a prefix query; quoted, so taken as it is.
        EXECUTE format(
          'CREATE FUNCTION search_prefix(text) RETURNS tsquery LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS %L',
          format($prefix$SELECT (pg_catalog.quote_literal(pg_catalog.lower(%s.unaccent('%s.unaccent'::regdictionary, $1) COLLATE "und-x-icu")) || ':*')::tsquery$prefix$, ext, ext));
      END
      $migration$;

      CREATE TABLE record_ids (table_name text PRIMARY KEY, last_id bigint NOT NULL);
      INSERT INTO record_ids (table_name, last_id) VALUES ('authors', 0), ('book_collections', 0), ('books', 0);
      CREATE TABLE authors (
        id bigint PRIMARY KEY,
        name text COLLATE "C" NOT NULL
      );
      CREATE TABLE book_collections (
        id bigint PRIMARY KEY,
        name text COLLATE "C" NOT NULL
      );
      CREATE TABLE books (
        id bigint PRIMARY KEY,
        name text COLLATE "C" NOT NULL,
        author_id bigint NOT NULL REFERENCES authors (id) ON DELETE RESTRICT,
        book_collection_id bigint REFERENCES book_collections (id) ON DELETE SET NULL
      );
      CREATE INDEX books_author_id ON books (author_id);
      CREATE INDEX books_book_collection_id ON books (book_collection_id);
      CREATE INDEX authors_name ON authors (name, id);
      CREATE INDEX book_collections_name ON book_collections (name, id);
      CREATE INDEX books_name ON books (name, id);
      CREATE INDEX books_author_name ON books (author_id, name, id);
      CREATE INDEX books_book_collection_name ON books (book_collection_id, name, id);
      CREATE INDEX authors_search ON authors USING gin (search_vector(name));
      CREATE INDEX book_collections_search ON book_collections USING gin (search_vector(name));
      CREATE INDEX books_search ON books USING gin (search_vector(name));
    `,
  },
  {
    version: 2,
    name: 'data_version: the commits that changed this database, for version()',
    // Every transaction that changes authors, collections or books adds one to a slot of
    // data_version as it commits; version() reads the sum, which thus changes exactly when this
    // database's data does, in the same commit (a reader sees the new sum only with the new data).
    // The trigger is deferred to the commit, and counts once a transaction (a transaction-local
    // setting marks it counted): the slot's row is locked only from there to the end of the
    // commit, after every other lock the transaction takes, so no two writes deadlock on it.
    // Eight slots, one per backend pid modulo 8, so that concurrent commits seldom wait for each other.
    sql: `
      CREATE TABLE data_version (slot smallint PRIMARY KEY, commits bigint NOT NULL);
      INSERT INTO data_version (slot, commits) SELECT slot, 0 FROM generate_series(0, 7) AS slot;
      CREATE FUNCTION count_data_commit() RETURNS trigger LANGUAGE plpgsql AS $count$
      BEGIN
        IF pg_catalog.current_setting('catalogue.commit_counted', true) IS DISTINCT FROM 'yes' THEN
          PERFORM pg_catalog.set_config('catalogue.commit_counted', 'yes', true);
          UPDATE data_version SET commits = commits + 1 WHERE slot = pg_catalog.pg_backend_pid() % 8;
        END IF;
        RETURN NULL;
      END
      $count$;
      CREATE CONSTRAINT TRIGGER authors_commit AFTER INSERT OR UPDATE OR DELETE ON authors
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION count_data_commit();
      CREATE CONSTRAINT TRIGGER book_collections_commit AFTER INSERT OR UPDATE OR DELETE ON book_collections
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION count_data_commit();
      CREATE CONSTRAINT TRIGGER books_commit AFTER INSERT OR UPDATE OR DELETE ON books
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION count_data_commit();
      -- A constraint trigger cannot fire on TRUNCATE (an operator's, say): a statement trigger counts it.
      CREATE TRIGGER authors_truncate AFTER TRUNCATE ON authors EXECUTE FUNCTION count_data_commit();
      CREATE TRIGGER book_collections_truncate AFTER TRUNCATE ON book_collections EXECUTE FUNCTION count_data_commit();
      CREATE TRIGGER books_truncate AFTER TRUNCATE ON books EXECUTE FUNCTION count_data_commit();
    `,
  },
  {
    version: 3,
    name: 'search_totals and bm25 functions: ranking as SQLite FTS5 bm25 does',
    // What FTS5's bm25 reads from its index besides the row: the rows of a table and the tokens of
    // all of them (a book's: its title's words, one for its author, one for a collection). Kept per
    // slot as data_version is (a row per backend pid modulo 8, so that concurrent commits seldom
    // wait for each other), by a trigger deferred to the commit. search_fold() is a search word as
    // search_prefix() compares it, to count a row's words that begin with it; bm25_idf() and
    // bm25_term() are FTS5's arithmetic (sqlite/ext/fts5/fts5_aux.c), in float8 as its C is, in the
    // same order, so that equal inputs give bit-equal scores (src/store/postgres/search.ts).
    sql: `
      CREATE TABLE search_totals (
        table_name text NOT NULL, slot smallint NOT NULL, records bigint NOT NULL, words bigint NOT NULL,
        PRIMARY KEY (table_name, slot)
      );
      INSERT INTO search_totals (table_name, slot, records, words)
        SELECT table_name, slot, 0, 0 FROM unnest(ARRAY['authors', 'book_collections', 'books']) AS table_name,
          generate_series(0, 7) AS slot;
      UPDATE search_totals SET records = (SELECT COUNT(*) FROM authors),
        words = (SELECT COALESCE(SUM(cardinality(search_words(name))), 0) FROM authors)
        WHERE table_name = 'authors' AND slot = 0;
      UPDATE search_totals SET records = (SELECT COUNT(*) FROM book_collections),
        words = (SELECT COALESCE(SUM(cardinality(search_words(name))), 0) FROM book_collections)
        WHERE table_name = 'book_collections' AND slot = 0;
      UPDATE search_totals SET records = (SELECT COUNT(*) FROM books),
        words = (SELECT COALESCE(SUM(cardinality(search_words(name)) + 1 + (book_collection_id IS NOT NULL)::int), 0) FROM books)
        WHERE table_name = 'books' AND slot = 0;

      CREATE FUNCTION add_search_totals(tbl text, d_records int, d_words bigint) RETURNS void LANGUAGE sql AS $add$
        UPDATE search_totals SET records = records + d_records, words = words + d_words
          WHERE table_name = tbl AND slot = pg_catalog.pg_backend_pid() % 8
      $add$;
      CREATE FUNCTION count_name_words() RETURNS trigger LANGUAGE plpgsql AS $count$
      DECLARE
        d_records int := 0;
        d_words bigint := 0;
      BEGIN
        IF TG_OP <> 'DELETE' THEN
          d_records := 1;
          d_words := cardinality(search_words(NEW.name));
        END IF;
        IF TG_OP <> 'INSERT' THEN
          d_records := d_records - 1;
          d_words := d_words - cardinality(search_words(OLD.name));
        END IF;
        IF d_records <> 0 OR d_words <> 0 THEN PERFORM add_search_totals(TG_TABLE_NAME, d_records, d_words); END IF;
        RETURN NULL;
      END
      $count$;
      CREATE FUNCTION count_book_words() RETURNS trigger LANGUAGE plpgsql AS $count$
      DECLARE
        d_records int := 0;
        d_words bigint := 0;
      BEGIN
        IF TG_OP <> 'DELETE' THEN
          d_records := 1;
          d_words := cardinality(search_words(NEW.name)) + 1 + (NEW.book_collection_id IS NOT NULL)::int;
        END IF;
        IF TG_OP <> 'INSERT' THEN
          d_records := d_records - 1;
          d_words := d_words - cardinality(search_words(OLD.name)) - 1 - (OLD.book_collection_id IS NOT NULL)::int;
        END IF;
        IF d_records <> 0 OR d_words <> 0 THEN PERFORM add_search_totals(TG_TABLE_NAME, d_records, d_words); END IF;
        RETURN NULL;
      END
      $count$;
      CREATE FUNCTION clear_search_totals() RETURNS trigger LANGUAGE plpgsql AS $clear$
      BEGIN
        UPDATE search_totals SET records = 0, words = 0 WHERE table_name = TG_TABLE_NAME;
        RETURN NULL;
      END
      $clear$;
      CREATE CONSTRAINT TRIGGER authors_search_totals AFTER INSERT OR UPDATE OR DELETE ON authors
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION count_name_words();
      CREATE CONSTRAINT TRIGGER book_collections_search_totals AFTER INSERT OR UPDATE OR DELETE ON book_collections
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION count_name_words();
      CREATE CONSTRAINT TRIGGER books_search_totals AFTER INSERT OR UPDATE OR DELETE ON books
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION count_book_words();
      CREATE TRIGGER authors_search_truncate AFTER TRUNCATE ON authors EXECUTE FUNCTION clear_search_totals();
      CREATE TRIGGER book_collections_search_truncate AFTER TRUNCATE ON book_collections
        EXECUTE FUNCTION clear_search_totals();
      CREATE TRIGGER books_search_truncate AFTER TRUNCATE ON books EXECUTE FUNCTION clear_search_totals();

      DO $migration$
      DECLARE
        ext text;
      BEGIN
        SELECT quote_ident(n.nspname) INTO ext FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
          WHERE e.extname = 'unaccent';
        EXECUTE format(
          'CREATE FUNCTION search_fold(text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS %L',
          format($fold$SELECT pg_catalog.lower(%s.unaccent('%s.unaccent'::regdictionary, $1) COLLATE "und-x-icu") COLLATE "C"$fold$, ext, ext));
      END
      $migration$;
      -- IDF = ln((N - n + 0.5) / (n + 0.5)), 1e-6 when not above 0 (N rows, n rows holding the phrase).
      CREATE FUNCTION bm25_idf(total bigint, hits bigint) RETURNS float8 LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        RETURN (SELECT CASE WHEN idf <= 0::float8 THEN 1e-6::float8 ELSE idf END
          FROM pg_catalog.ln(((total - hits)::float8 + 0.5::float8) / (hits::float8 + 0.5::float8)) AS idf);
      -- One phrase's share: IDF × f × (k1 + 1) / (f + k1 × (1 - b + b × D / avgdl)), k1 = 1.2, b = 0.75.
      CREATE FUNCTION bm25_term(idf float8, freq float8, length float8, avgdl float8) RETURNS float8
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        RETURN idf * ((freq * (1.2::float8 + 1::float8))
          / (freq + 1.2::float8 * ((1::float8 - 0.75::float8) + (0.75::float8 * length) / avgdl)));
    `,
  },
  {
    version: 4,
    name: 'data_generation: what version() gives besides the count, the same for every instance',
    // version() tags streamed answers. It was this process's own opening and the count, so each
    // instance (and each worker) gave its own tag for the same data, and a revalidation reaching
    // another one got 200, not 304. The generation is the database's instead: every instance reads
    // the same. Each start of an instance draws a new one (PostgresStore.open), so that a database
    // restored from a dump, whose counts went back, never gives again a tag given before.
    sql: `
      CREATE TABLE data_generation (
        only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
        generation text NOT NULL
      );
      INSERT INTO data_generation (generation) VALUES (gen_random_uuid()::text);
    `,
  },
  {
    version: 5,
    name: 'search_totals counted a statement at a time: a bulk write adds its change once',
    // Migration 3's row trigger added each changed row to the slot's totals at the commit: a
    // transaction changing many rows updated one row many times, each update following the row's
    // growing version chain (a 1,000-book import batch committed in 98 ms instead of 4 ms). Now each
    // statement sums its change from its transition tables into a transaction-local setting (undone
    // with a savepoint rolled back, as the rows are), and a deferred trigger writes the sums once, at
    // the commit, after every other lock of the transaction, as data_version counts once. (Hand-written
    // SQL that sets these constraints IMMEDIATE would flush before its statement's own sum: the
    // service never does.)
    sql: `
      DROP TRIGGER authors_search_totals ON authors;
      DROP TRIGGER book_collections_search_totals ON book_collections;
      DROP TRIGGER books_search_totals ON books;
      DROP FUNCTION count_name_words();
      DROP FUNCTION count_book_words();

      -- Adds a change to the table's sums waiting for the commit: "records words", two integers.
      CREATE FUNCTION pend_search_totals(tbl text, d_records bigint, d_words bigint) RETURNS void
        LANGUAGE plpgsql AS $pend$
      DECLARE
        pending text := pg_catalog.current_setting('catalogue.search_pending_' || tbl, true);
        records bigint := 0;
        words bigint := 0;
      BEGIN
        IF pending IS NOT NULL AND pending <> '' THEN
          records := pg_catalog.split_part(pending, ' ', 1)::bigint;
          words := pg_catalog.split_part(pending, ' ', 2)::bigint;
        END IF;
        PERFORM pg_catalog.set_config('catalogue.search_pending_' || tbl,
          (records + d_records)::text || ' ' || (words + d_words)::text, true);
      END
      $pend$;

      -- The words a row adds to its table's total: a name's; a book's title, author and collection.
      ${searchTotalFunctions}

      -- At the commit, once a transaction: the sums of the three tables into this backend's slots.
      CREATE FUNCTION flush_search_totals() RETURNS trigger LANGUAGE plpgsql AS $flush$
      DECLARE
        tbl text;
        pending text;
      BEGIN
        FOREACH tbl IN ARRAY ARRAY['authors', 'book_collections', 'books'] LOOP
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
      $flush$;

      -- A TRUNCATE clears the table's totals at once: what earlier statements left waiting goes too.
      CREATE OR REPLACE FUNCTION clear_search_totals() RETURNS trigger LANGUAGE plpgsql AS $clear$
      BEGIN
        PERFORM pg_catalog.set_config('catalogue.search_pending_' || TG_TABLE_NAME, '', true);
        UPDATE search_totals SET records = 0, words = 0 WHERE table_name = TG_TABLE_NAME;
        RETURN NULL;
      END
      $clear$;

      ${searchTotalTriggers}
    `,
  },
  {
    version: 6,
    name: 'names in Unicode NFC, as the service stores them since',
    // As SQLite's migration 5: names stored by earlier versions decomposed are composed, so that
    // filter[name] and the import find a name whichever form it was sent in. normalize() needs a
    // UTF8 database; under another encoding names were stored as sent and stay so.
    sql: `
      DO $migration$
      BEGIN
        IF pg_catalog.current_setting('server_encoding') = 'UTF8' THEN
          UPDATE authors SET name = normalize(name, NFC) WHERE name IS NOT NFC NORMALIZED;
          UPDATE book_collections SET name = normalize(name, NFC) WHERE name IS NOT NFC NORMALIZED;
          UPDATE books SET name = normalize(name, NFC) WHERE name IS NOT NFC NORMALIZED;
        END IF;
      END
      $migration$;
    `,
  },
  {
    version: 7,
    name: 'ids from identity columns: creates of a table no longer wait for each other',
    // Migration 1's counter rows in record_ids were locked by every create of a table until its
    // commit reached the disk: the creates of a table, across every instance, committed one at a
    // time (573 POSTs a second on a 2-core machine, where plain inserts reach 8,000). Each id now
    // comes from its table's identity sequence, which no transaction holds: ids stay unique,
    // increasing in the order handed out and never handed out again, but a write rolled back (an
    // atomic batch that failed) leaves a gap, which SQLite's AUTOINCREMENT does not. Each sequence
    // starts past both its counter and the table's largest id, so no id given before comes again.
    // record_ids goes: an instance of an older build still running would take ids from it that the
    // sequences hand out too; without it, its creates fail (42P01: a 503) until it is replaced.
    sql: `
      DO $migration$
      DECLARE
        tbl text;
        next_id bigint;
      BEGIN
        FOREACH tbl IN ARRAY ARRAY['authors', 'book_collections', 'books'] LOOP
          EXECUTE format('SELECT GREATEST((SELECT last_id FROM record_ids WHERE table_name = %L), (SELECT MAX(id) FROM %I), 0) + 1',
            tbl, tbl) INTO next_id;
          EXECUTE format('ALTER TABLE %I ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (START WITH %s)', tbl, next_id);
        END LOOP;
      END
      $migration$;
      DROP TABLE record_ids;
    `,
  },
  {
    version: 8,
    name: "a book's author and collection indexed with its id: their pages read in id order",
    // A btree on author_id alone holds an author's books in the order of their places on disk, not
    // of their ids: a page of an author's books in id order (the default) walked the primary key
    // instead, testing every book until it had 20 (at a million books, 110 ms for an author whose
    // only book is the last). With the id beside it, the index holds them in id order, as SQLite's
    // (whose index entries end with the rowid) always did: the page reads its 20 entries and stops,
    // and the total of a filtered page is still counted in the index alone. Same names as before,
    // and as SQLite's; the foreign keys' checks use them as they did.
    sql: `
      DROP INDEX books_author_id;
      CREATE INDEX books_author_id ON books (author_id, id);
      DROP INDEX books_book_collection_id;
      CREATE INDEX books_book_collection_id ON books (book_collection_id, id);
    `,
  },
  {
    version: 9,
    name: 'search words stored beside each searched attribute, indexed by GIN: searches that stop at their first page',
    // A search page is read in id order and stops at its first
    // matches (src/store/postgres/search.ts): that tests rows one by one, which the stored words
    // make cheap. Drawn from the descriptions (src/store/postgres/search-columns.ts).
    sql: searchColumnsSql(resources),
  },
]

/** Any number fits: the key of the advisory lock that makes the instances starting together migrate one at a time. */
const MIGRATION_LOCK = 7_419_233_001

/**
 * Brings the schema up to the last of `migrations`, each in its own transaction. Each transaction
 * first takes a transaction-scoped advisory lock and only then reads the version, so that many
 * instances starting together apply each migration once: whoever comes second waits for the
 * first's commit and then sees the version it wrote.
 */
export async function migratePostgres(
  sql: SQL,
  migrations: readonly PostgresMigration[],
  onApplied: (migration: PostgresMigration) => void = () => {},
): Promise<void> {
  const latest = migrations.at(-1)?.version ?? 0
  for (;;) {
    const applied = await sql.begin(async (tx): Promise<PostgresMigration | null> => {
      // STATEMENT_TIMEOUT is for requests: waiting for another instance's migration, or building
      // an index over a large table, may take longer.
      await tx`SET LOCAL statement_timeout = 0`
      await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`
      await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`
      const [{ current }] = await tx`SELECT COALESCE(MAX(version), 0)::int AS current FROM schema_migrations`
      if (current > latest) {
        throw new Error(`the database schema is at version ${current}, newer than this build knows (${latest})`)
      }
      const next = migrations.find((migration) => migration.version > current)
      if (!next) return null
      await tx.unsafe(next.sql)
      await tx`INSERT INTO schema_migrations (version, name) VALUES (${next.version}, ${next.name})`
      return next
    })
    if (!applied) return
    onApplied(applied)
  }
}

/** The version of the last migration applied to the database: 0 when it has none (no catalogue yet). */
export async function postgresSchemaVersion(sql: SQL): Promise<number> {
  const [row] = await sql`SELECT to_regclass('schema_migrations') IS NOT NULL AS known`
  if (!row?.known) return 0
  const [{ current }] = await sql`SELECT COALESCE(MAX(version), 0)::int AS current FROM schema_migrations`
  return Number(current)
}
