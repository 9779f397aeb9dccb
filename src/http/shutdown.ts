import type { Server } from 'bun'

/** How a stop went: `forced` when the deadline came first, with the requests still open then. */
export type StopOutcome = { readonly forced: false } | { readonly forced: true; readonly openRequests: number }

/**
 * Stops accepting connections and lets the requests in flight finish; once `deadlineMs` has
 * passed, closes whatever is still open (a client reading or sending too slowly), which ends its
 * request there.
 */
export async function stopServer(server: Server<unknown>, deadlineMs: number): Promise<StopOutcome> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<'deadline'>((resolve) => {
    timer = setTimeout(() => resolve('deadline'), deadlineMs)
  })
  // Bun closes idle keep-alive connections at once, and the others as their response completes.
  const outcome = await Promise.race([server.stop(false), deadline])
  clearTimeout(timer)
  if (outcome !== 'deadline') return { forced: false }
  const openRequests = server.pendingRequests
  await server.stop(true)
  return { forced: true, openRequests }
}
