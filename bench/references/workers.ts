/**
 * A reference server run as several processes on one port, the reference's counterpart of the
 * service's `--workers N`: REFERENCE_WORKERS=N (default 1) makes the process started spawn N - 1
 * copies of itself, each listening with SO_REUSEPORT (Bun.serve's reusePort), so the kernel
 * spreads the connections over them. SIGTERM to the first stops them all.
 */
import type { Server, Subprocess } from 'bun'
import { notFound, pathId } from './documents'

export const referenceWorkers = Math.max(1, Number(process.env.REFERENCE_WORKERS) || 1)
const isCopy = process.env.REFERENCE_COPY === '1'

/** Bun.serve's reusePort: only needed, and only wanted, when there are copies. */
export const reusePort = referenceWorkers > 1

/** Starts the copies (from the first process only) and stops them, then `close`, on SIGTERM. */
export function runWorkers(server: Server<unknown>, close: () => void | Promise<void>): void {
  const copies: Subprocess[] = isCopy
    ? []
    : Array.from({ length: referenceWorkers - 1 }, () =>
        Bun.spawn([process.execPath, Bun.main], {
          env: { ...process.env, REFERENCE_COPY: '1' },
          stdio: ['ignore', 'inherit', 'inherit'],
        }),
      )
  process.on('SIGTERM', async () => {
    server.stop(true)
    for (const copy of copies) copy.kill('SIGTERM')
    await Promise.all(copies.map((copy) => copy.exited))
    await close()
    process.exit(0)
  })
}

/** What a reference answers for a book and the book list, whatever its database. */
export interface BookHandlers {
  showBook(id: number | null): Response | Promise<Response>
  patchBook(request: Request, id: number | null): Response | Promise<Response>
  deleteBook(id: number | null): Response | Promise<Response>
  listBooks(request: Request): Response | Promise<Response>
  postBook(request: Request): Response | Promise<Response>
  /** An author with its books; a 404, as any other path, where the reference has none. */
  showAuthor?(request: Request, id: number | null): Response | Promise<Response>
}

/**
 * Serves `handle` with plain Bun.serve routes on 127.0.0.1 (anything else a 404), as one process
 * or REFERENCE_WORKERS of them; `close` runs on SIGTERM.
 */
export function serveReference(port: number, handle: BookHandlers, close: () => void | Promise<void>): void {
  const { showAuthor } = handle
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
      '/api/v1/authors/:id': {
        GET: (request) => (showAuthor ? showAuthor(request, pathId(request.params.id)) : notFound()),
      },
    },
    fetch: notFound,
  })
  runWorkers(server, close)
}
