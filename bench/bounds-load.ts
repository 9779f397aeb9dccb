/**
 * The clients of `bun run bench -- bounds`, in a process of their own so that their memory and
 * buffers are not the service's:
 *
 * - `bun bench/bounds-load.ts read ORIGIN N PATH [ACCEPT_ENCODING]`: N requests at once, each
 *   read to its end; prints `{"statuses":{"200":n,...},"bytes":n,"ms":n}`.
 * - `bun bench/bounds-load.ts stall ORIGIN N PATH SECONDS`: N connections that send the request
 *   and never read the answer (the socket is paused: what the kernel buffers stays unread), held
 *   SECONDS; prints `{"connected":n}`.
 */
import net from 'node:net'

const [mode, origin = '', count = '0', path = '/', extra] = Bun.argv.slice(2)
const n = Number(count)

async function readAll(): Promise<void> {
  const statuses: Record<string, number> = {}
  let bytes = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: n }, async () => {
      try {
        const response = await fetch(origin + path, {
          headers: { accept: 'application/vnd.api+json', 'accept-encoding': extra ?? 'identity' },
          decompress: false,
        } as RequestInit)
        const reader = response.body?.getReader()
        for (;;) {
          const chunk = await reader?.read()
          if (!chunk || chunk.done) break
          bytes += chunk.value.byteLength
        }
        statuses[response.status] = (statuses[response.status] ?? 0) + 1
      } catch {
        statuses.failed = (statuses.failed ?? 0) + 1
      }
    }),
  )
  console.log(JSON.stringify({ statuses, bytes, ms: performance.now() - started }))
}

async function stall(): Promise<void> {
  const { hostname, port } = new URL(origin)
  const sockets: net.Socket[] = []
  let connected = 0
  for (let i = 0; i < n; i++) {
    const socket = net.connect(Number(port), hostname, () => {
      connected++
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAccept: application/vnd.api+json\r\n\r\n`)
    })
    socket.pause()
    socket.on('error', () => {})
    sockets.push(socket)
  }
  await Bun.sleep(Number(extra ?? '10') * 1000)
  for (const socket of sockets) socket.destroy()
  console.log(JSON.stringify({ connected }))
}

if (mode === 'read') await readAll()
else if (mode === 'stall') await stall()
else {
  console.error('usage: bounds-load.ts read|stall ORIGIN N PATH [ACCEPT_ENCODING|SECONDS]')
  process.exit(2)
}
process.exit(0)
