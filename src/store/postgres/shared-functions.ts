/**
 * The SQL of PostgreSQL's migrations 1 to 5 (and of shared migration 4) that no description says: the functions every type's
 * triggers and the searches share, as they were written then (migrations.ts runs them in order).
 * Released SQL: the text these build is never edited (the schema history tests compare it).
 */

/** The start of a DO block that finds the schema unaccent() lives in (into `ext`): migrations 1 and 3. */
export const unaccentSchema = `      DO $migration$
      DECLARE
        ext text;
      BEGIN
        SELECT quote_ident(n.nspname) INTO ext FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
          WHERE e.extname = 'unaccent';
`

/** Migration 3's row trigger function adding a row's words (`added` for NEW, `removed` for OLD) to search_totals. */
function countWordsFunction(name: string, added: string, removed: string): string {
  return `      CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $count$
      DECLARE
        d_records int := 0;
        d_words bigint := 0;
      BEGIN
        IF TG_OP <> 'DELETE' THEN
          d_records := 1;
          d_words := ${added};
        END IF;
        IF TG_OP <> 'INSERT' THEN
          d_records := d_records - 1;
          d_words := d_words - ${removed};
        END IF;
        IF d_records <> 0 OR d_words <> 0 THEN PERFORM add_search_totals(TG_TABLE_NAME, d_records, d_words); END IF;
        RETURN NULL;
      END
      $count$;`
}

/** Migration 1: search_words(), search_vector() and search_prefix(), and the id counters of that time. */
export const searchFunctionsSql = `
      CREATE EXTENSION IF NOT EXISTS unaccent;
${unaccentSchema}        -- The words as the SQLite index splits them: runs of letters and digits (ICU's classes,
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

      CREATE TABLE record_ids (table_name text PRIMARY KEY, last_id bigint NOT NULL);`

/** Migration 2: data_version and the function its triggers run. */
export const dataVersionSql = `
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
      $count$;`

/** Migration 3: search_totals, its row triggers of that time (gone with migration 5) and the bm25 functions. */
export const searchTotalsSql = `
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
${countWordsFunction('count_name_words', 'cardinality(search_words(NEW.name))', 'cardinality(search_words(OLD.name))')}
${countWordsFunction(
  'count_book_words',
  'cardinality(search_words(NEW.name)) + 1 + (NEW.book_collection_id IS NOT NULL)::int',
  'cardinality(search_words(OLD.name)) - 1 - (OLD.book_collection_id IS NOT NULL)::int',
)}
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

${unaccentSchema}        EXECUTE format(
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
    `

/** Migration 5: the row triggers of migration 3 dropped, and pend_search_totals(). */
export const pendSearchTotalsSql = `
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
`

/** Migration 5: clear_search_totals() again, clearing what is pending too. */
export const clearSearchTotalsSql = `
      -- A TRUNCATE clears the table's totals at once: what earlier statements left waiting goes too.
      CREATE OR REPLACE FUNCTION clear_search_totals() RETURNS trigger LANGUAGE plpgsql AS $clear$
      BEGIN
        PERFORM pg_catalog.set_config('catalogue.search_pending_' || TG_TABLE_NAME, '', true);
        UPDATE search_totals SET records = 0, words = 0 WHERE table_name = TG_TABLE_NAME;
        RETURN NULL;
      END
      $clear$;`

/**
 * Shared migration 3: search_words() and search_vector() in PL/pgSQL, the same expression as
 * migration 1's. As SQL functions whose body calls unaccent() (STABLE), they were never inlined:
 * each statement that stores a row's search words (migration 9's generated column) parsed the
 * body twice, in the planner's try at inlining it and in the SQL function's own start, about 45 µs
 * of a create's or a rename's 250. PL/pgSQL keeps its plan for the session.
 */
export const plpgsqlWordsSql = `
${unaccentSchema}        EXECUTE format(
          $create$CREATE OR REPLACE FUNCTION search_words(text) RETURNS text[] LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $words$
          BEGIN
            RETURN pg_catalog.array_remove(pg_catalog.regexp_split_to_array(pg_catalog.lower(%s.unaccent('%s.unaccent'::regdictionary, $1) COLLATE "und-x-icu"), '[^[:alnum:]]+'), '');
          END
          $words$$create$, ext, ext);
        EXECUTE format(
          $create$CREATE OR REPLACE FUNCTION search_vector(text) RETURNS tsvector LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $vector$
          BEGIN
            RETURN pg_catalog.array_to_tsvector(pg_catalog.array_remove(pg_catalog.regexp_split_to_array(pg_catalog.lower(%s.unaccent('%s.unaccent'::regdictionary, $1) COLLATE "und-x-icu"), '[^[:alnum:]]+'), ''));
          END
          $vector$$create$, ext, ext);
      END
      $migration$;`

/**
 * Shared migration 5: search_prefix() in PL/pgSQL, the same expression as migration 1's, for the
 * reason search_words() is (shared migration 4): as an SQL function calling unaccent() (STABLE) it
 * was never inlined. A search names it once per word, field and typo level: each planned with
 * its word parsed its body twice (about 7 µs a name), and a generic plan, whose word is a
 * parameter, ran it as SQL for every row it tested (8 µs a row, against 3 µs in PL/pgSQL).
 */
export const plpgsqlPrefixSql = `
${unaccentSchema}        EXECUTE format(
          $create$CREATE OR REPLACE FUNCTION search_prefix(text) RETURNS tsquery LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $prefix$
          BEGIN
            RETURN (pg_catalog.quote_literal(pg_catalog.lower(%s.unaccent('%s.unaccent'::regdictionary, $1) COLLATE "und-x-icu")) || ':*')::tsquery;
          END
          $prefix$$create$, ext, ext);
      END
      $migration$;`
