/**
 * The raw reference server: what the compared routes cost with no framework, so the service's
 * numbers can be read as a ratio. Plain Bun.serve and the prepared bun:sqlite statements of
 * bench/reference-sqlite.ts (the service's pragmas and SQL, the same JSON bytes out). It has:
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
 * it compares. bench/reference-elysia.ts serves the same handlers through Elysia.
 *
 * Run as its own process:
 *   PORT=<port> REFERENCE_DB=<path> [REFERENCE_WORKERS=n] [REFERENCE_DURABILITY=normal]
 *     [REFERENCE_LISTS=streamed] [REFERENCE_COMMITS=grouped] bun bench/reference.ts
 */
import { notFound, pathId } from './reference-documents'
import { openQueries, referenceEnvironment, referenceHandlers } from './reference-sqlite'
import { reusePort, runWorkers } from './reference-workers'

const { port, path, durability, lists, commits } = referenceEnvironment('reference')
const queries = openQueries(path, durability, commits)
const handle = referenceHandlers(queries, lists)

const server = Bun.serve({
  hostname: '127.0.0.1',
  port,
  reusePort,
  routes: {
    '/api/v1/books/:id': {
      GET: (request) => handle.showBook(pathId(request.params.id)),
      PATCH: (request) => handle.patchBook(request, pathId(request.params.id)),
      DELETE: (request) => handle.deleteBook(pathId(request.params.id)),
    },
    '/api/v1/books': { GET: handle.listBooks, POST: handle.postBook },
    '/api/v1/authors/:id': { GET: (request) => handle.showAuthor(request, pathId(request.params.id)) },
  },
  fetch: notFound,
})

runWorkers(server, () => queries.db.close())
