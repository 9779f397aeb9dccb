import type { PostgresMigration } from '../../../src/store/postgres/migrate'

/** The PostgreSQL migrations 4 to 9 as they were written by hand (see postgres-migrations-1-3.ts). */
export const handWrittenPostgresMigrations4to9: readonly PostgresMigration[] = [
  {
    version: 4,
    name: 'data_generation: what version() gives besides the count, the same for every instance',
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
      CREATE FUNCTION name_words_added() RETURNS trigger LANGUAGE plpgsql AS $added$
      BEGIN
        PERFORM pend_search_totals(TG_TABLE_NAME, COUNT(*), COALESCE(SUM(cardinality(search_words(name))), 0)) FROM new_rows;
        RETURN NULL;
      END
      $added$;
      CREATE FUNCTION name_words_removed() RETURNS trigger LANGUAGE plpgsql AS $removed$
      BEGIN
        PERFORM pend_search_totals(TG_TABLE_NAME, -COUNT(*), -COALESCE(SUM(cardinality(search_words(name))), 0)) FROM old_rows;
        RETURN NULL;
      END
      $removed$;
      CREATE FUNCTION name_words_changed() RETURNS trigger LANGUAGE plpgsql AS $changed$
      BEGIN
        PERFORM pend_search_totals(TG_TABLE_NAME, 0, (SELECT COALESCE(SUM(cardinality(search_words(name))), 0) FROM new_rows) - (SELECT COALESCE(SUM(cardinality(search_words(name))), 0) FROM old_rows));
        RETURN NULL;
      END
      $changed$;
      CREATE FUNCTION book_words_added() RETURNS trigger LANGUAGE plpgsql AS $added$
      BEGIN
        PERFORM pend_search_totals(TG_TABLE_NAME, COUNT(*), COALESCE(SUM(cardinality(search_words(name)) + 1 + (book_collection_id IS NOT NULL)::int), 0)) FROM new_rows;
        RETURN NULL;
      END
      $added$;
      CREATE FUNCTION book_words_removed() RETURNS trigger LANGUAGE plpgsql AS $removed$
      BEGIN
        PERFORM pend_search_totals(TG_TABLE_NAME, -COUNT(*), -COALESCE(SUM(cardinality(search_words(name)) + 1 + (book_collection_id IS NOT NULL)::int), 0)) FROM old_rows;
        RETURN NULL;
      END
      $removed$;
      CREATE FUNCTION book_words_changed() RETURNS trigger LANGUAGE plpgsql AS $changed$
      BEGIN
        PERFORM pend_search_totals(TG_TABLE_NAME, 0, (SELECT COALESCE(SUM(cardinality(search_words(name)) + 1 + (book_collection_id IS NOT NULL)::int), 0) FROM new_rows) - (SELECT COALESCE(SUM(cardinality(search_words(name)) + 1 + (book_collection_id IS NOT NULL)::int), 0) FROM old_rows));
        RETURN NULL;
      END
      $changed$;

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

      CREATE TRIGGER authors_search_added AFTER INSERT ON authors REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION name_words_added();
      CREATE TRIGGER authors_search_removed AFTER DELETE ON authors REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION name_words_removed();
      CREATE TRIGGER authors_search_changed AFTER UPDATE ON authors
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION name_words_changed();
      CREATE TRIGGER book_collections_search_added AFTER INSERT ON book_collections REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION name_words_added();
      CREATE TRIGGER book_collections_search_removed AFTER DELETE ON book_collections REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION name_words_removed();
      CREATE TRIGGER book_collections_search_changed AFTER UPDATE ON book_collections
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION name_words_changed();
      CREATE TRIGGER books_search_added AFTER INSERT ON books REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION book_words_added();
      CREATE TRIGGER books_search_removed AFTER DELETE ON books REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION book_words_removed();
      CREATE TRIGGER books_search_changed AFTER UPDATE ON books
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION book_words_changed();
      CREATE CONSTRAINT TRIGGER authors_search_totals AFTER INSERT OR UPDATE OR DELETE ON authors
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION flush_search_totals();
      CREATE CONSTRAINT TRIGGER book_collections_search_totals AFTER INSERT OR UPDATE OR DELETE ON book_collections
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION flush_search_totals();
      CREATE CONSTRAINT TRIGGER books_search_totals AFTER INSERT OR UPDATE OR DELETE ON books
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION flush_search_totals();
    `,
  },
  {
    version: 6,
    name: 'names in Unicode NFC, as the service stores them since',
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
    sql: `ALTER TABLE "authors" ADD COLUMN "name_search" tsvector GENERATED ALWAYS AS (search_vector("name")) STORED;
CREATE INDEX "authors_name_search" ON "authors" USING gin ("name_search");
DROP INDEX IF EXISTS "authors_search";
ALTER TABLE "book_collections" ADD COLUMN "name_search" tsvector GENERATED ALWAYS AS (search_vector("name")) STORED;
CREATE INDEX "book_collections_name_search" ON "book_collections" USING gin ("name_search");
DROP INDEX IF EXISTS "book_collections_search";
ALTER TABLE "books" ADD COLUMN "name_search" tsvector GENERATED ALWAYS AS (search_vector("name")) STORED;
CREATE INDEX "books_name_search" ON "books" USING gin ("name_search");
DROP INDEX IF EXISTS "books_search";`,
  },
]
