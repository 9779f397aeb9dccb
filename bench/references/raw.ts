/**
 * The raw reference server: what the compared routes cost with no framework, so the service's
 * numbers can be read as a ratio. Plain Bun.serve and the prepared bun:sqlite statements of
 * bench/references/sqlite-handlers.ts (the service's pragmas and SQL, the same JSON bytes out). It has:
 *
 * - GET /api/v1/books/:id (with the author and the collection included), POST /api/v1/books,
 *   PATCH /api/v1/books/:id (a rename) and DELETE /api/v1/books/:id, each write committed alone or
 *   (REFERENCE_COMMITS=grouped) in group commits as the service makes them;
 * - GET /api/v1/books: every book or (`author_id=N`) an author's, unpaginated, written whole or
 *   (REFERENCE_LISTS=streamed) streamed in batches of 1,000 as the service does;
 *   `page[number]`/`page[size]` (optionally `filter[search]`, ranked as the service ranks it) and
 *   `page[size]`/`page[after]` cursor pages in id order;
 * - GET /api/v1/authors/:id with its books included (the default, or `include=books`).
 *
 * Anything else (sort, other filters, `page[before]`) is a 400 here: the bench sends it only what
 * it compares. bench/references/elysia.ts serves the same handlers through Elysia.
 *
 * Run as its own process:
 *   PORT=<port> REFERENCE_DB=<path> [REFERENCE_WORKERS=n] [REFERENCE_DURABILITY=normal]
 *     [REFERENCE_LISTS=streamed] [REFERENCE_COMMITS=grouped] bun bench/references/raw.ts
 */
import { openQueries, referenceEnvironment, referenceHandlers } from './sqlite-handlers'
import { serveReference } from './workers'

const { port, path, durability, lists, commits } = referenceEnvironment('reference')
const queries = openQueries(path, durability, commits)
const handle = referenceHandlers(queries, lists)

serveReference(port, handle, () => queries.db.close())
