import { unaccentSchema } from './shared-functions'

/**
 * Shared migration 7: search words cut to what PostgreSQL's text search holds. A lexeme of a
 * tsvector or tsquery is at most 2,047 bytes; a longer word (one of a name's up to 1,000
 * characters, 3,000 bytes in Chinese; or a search's, up to the URL's length) failed the write
 * (500, and an import lost its whole batch) or the search (500). Now each is cut to its longest
 * start within 2,047 bytes by search_cut(), the same on both sides: a search for the word, or any
 * start of it, finds its record, as on SQLite (whose index has no such limit; a search word of
 * more than 2,047 bytes finds on PostgreSQL the records whose word begins with its first 2,047).
 * The cut costs a write one length check where the name is 1,023 bytes or less (no word of it can reach
 * 2,047 bytes, accents unfolded or not): every name but a rare long one.
 */

/** The words expression of shared migration 3, over `$1`, with `%s` for the unaccent schema. */
const WORDS = `pg_catalog.array_remove(pg_catalog.regexp_split_to_array(pg_catalog.lower(%s.unaccent('%s.unaccent'::regdictionary, $1) COLLATE "und-x-icu"), '[^[:alnum:]]+'), '')`

/** At most this many bytes in a name, none of its words needs cutting. */
const SAFE_NAME_BYTES = 1023

export const longWordsSql = `
      CREATE FUNCTION search_cut(text) RETURNS text LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $cut$
      DECLARE
        n int := pg_catalog.length($1);
      BEGIN
        -- A character is 1 to 4 bytes: each turn drops at least a quarter of the excess, in characters.
        WHILE pg_catalog.octet_length(pg_catalog.left($1, n)) > 2047 LOOP
          n := n - (pg_catalog.octet_length(pg_catalog.left($1, n)) - 2044) / 4;
        END LOOP;
        RETURN pg_catalog.left($1, n);
      END
      $cut$;
${unaccentSchema}        EXECUTE format(
          $create$CREATE OR REPLACE FUNCTION search_words(text) RETURNS text[] LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $words$
          DECLARE
            words text[] := ${WORDS};
          BEGIN
            IF pg_catalog.octet_length($1) <= ${SAFE_NAME_BYTES} THEN RETURN words; END IF;
            RETURN ARRAY(SELECT search_cut(w) FROM unnest(words) AS w);
          END
          $words$$create$, ext, ext);
        EXECUTE format(
          $create$CREATE OR REPLACE FUNCTION search_vector(text) RETURNS tsvector LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $vector$
          DECLARE
            words text[] := ${WORDS};
          BEGIN
            IF pg_catalog.octet_length($1) > ${SAFE_NAME_BYTES} THEN words := ARRAY(SELECT search_cut(w) FROM unnest(words) AS w); END IF;
            RETURN pg_catalog.array_to_tsvector(words);
          END
          $vector$$create$, ext, ext);
        EXECUTE format(
          $create$CREATE OR REPLACE FUNCTION search_prefix(text) RETURNS tsquery LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $prefix$
          DECLARE
            word text := pg_catalog.lower(%s.unaccent('%s.unaccent'::regdictionary, $1) COLLATE "und-x-icu");
          BEGIN
            IF pg_catalog.octet_length(word) > 2047 THEN word := search_cut(word); END IF;
            RETURN (pg_catalog.quote_literal(word) || ':*')::tsquery;
          END
          $prefix$$create$, ext, ext);
      END
      $migration$;`
