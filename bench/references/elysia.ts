/**
 * The minimal Elysia baseline: the "16-line Elysia app over the same queries" of issue 10. Plain
 * `new Elysia()` routes, no plugins, no validation schemas, each calling the handler the raw
 * reference calls (bench/references/sqlite-handlers.ts: the same prepared statements, the same documents, the
 * same bytes). What it costs beyond bench/references/raw.ts is Elysia's routing and request handling.
 *
 *   PORT=<port> REFERENCE_DB=<path> [REFERENCE_DURABILITY=normal] [REFERENCE_LISTS=streamed] bun bench/references/elysia.ts
 */
import { Elysia } from 'elysia'
import { pathId } from './documents'
import { openQueries, referenceEnvironment, referenceHandlers } from './sqlite-handlers'
import { reusePort, runWorkers } from './workers'

const { port, path, durability, lists, commits } = referenceEnvironment('reference-elysia')
const queries = openQueries(path, durability, commits)
const handle = referenceHandlers(queries, lists)

const app = new Elysia()
  .get('/api/v1/books/:id', ({ params }) => handle.showBook(pathId(params.id)))
  .patch('/api/v1/books/:id', ({ params, request }) => handle.patchBook(request, pathId(params.id)))
  .delete('/api/v1/books/:id', ({ params }) => handle.deleteBook(pathId(params.id)))
  .get('/api/v1/books', ({ request }) => handle.listBooks(request))
  .post('/api/v1/books', ({ request }) => handle.postBook(request))
  .get('/api/v1/authors/:id', ({ params, request }) => handle.showAuthor(request, pathId(params.id)))
  .listen({ hostname: '127.0.0.1', port, reusePort })

if (app.server) runWorkers(app.server, () => queries.db.close())
