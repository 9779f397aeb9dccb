/**
 * A reference server run as several processes on one port, the reference's counterpart of the
 * service's `--workers N`: REFERENCE_WORKERS=N (default 1) makes the process started spawn N - 1
 * copies of itself, each listening with SO_REUSEPORT (Bun.serve's reusePort), so the kernel
 * spreads the connections over them. SIGTERM to the first stops them all.
 */
import type { Server, Subprocess } from 'bun'

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
