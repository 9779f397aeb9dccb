/**
 * The clients of `bun run bench -- bounds`, in a process of their own so that their memory and
 * buffers are not the service's. Client `i` connects from its own address, 127.0.x.y (any
 * 127.0.0.0/8 address reaches the loopback on Linux), as that many machines would:
 *
 * - `bun bench/parts/limits/bounds-load.ts read ORIGIN N PATH [ACCEPT_ENCODING]`: N requests at once, each
 *   read to its end; prints `{"statuses":{"200":n,...},"bytes":n,"ms":n}`.
 * - `bun bench/parts/limits/bounds-load.ts stall ORIGIN N PATH SECONDS`: N connections that send the request
 *   and never read the answer (the socket is paused: what the kernel buffers stays unread), held
 *   SECONDS; prints `{"connected":n}`.
 * - `bun bench/parts/limits/bounds-load.ts poll ORIGIN PATH`: GET PATH every 10 ms (one at a time, over
 *   one keep-alive connection, from 127.0.0.1) until its standard input closes, as a monitor
 *   polling a probe would; prints `{"latencies":[ms,...],"statuses":{"200":n,...}}`.
 */
import net from 'node:net'

const [mode, origin = '', count = '0', path = '/', extra] = Bun.argv.slice(2)
const n = Number(count)
const { hostname, port } = new URL(origin)

/** The address client `i` connects from: 127.0.1.1, 127.0.1.2, ... (never the bench's own 127.0.0.1). */
const addressOf = (i: number) => `127.0.${1 + Math.floor(i / 250)}.${1 + (i % 250)}`

/** One request over a connection of its own, read to its end: the status and the bytes read. */
function readOne(i: number): Promise<{ status: string; bytes: number }> {
  return new Promise((resolve) => {
    let head = ''
    let bytes = 0
    const socket = net.connect({ port: Number(port), host: hostname, localAddress: addressOf(i) }, () => {
      const coding = extra ?? 'identity'
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAccept: application/vnd.api+json\r\nAccept-Encoding: ${coding}\r\nConnection: close\r\n\r\n`,
      )
    })
    socket.on('data', (chunk: Buffer) => {
      bytes += chunk.length
      if (head.length < 12) head += chunk.subarray(0, 12).toString('latin1')
    })
    socket.on('error', () => resolve({ status: 'failed', bytes }))
    socket.on('close', () => resolve({ status: head.slice(9, 12) || 'failed', bytes }))
  })
}

async function readAll(): Promise<void> {
  const statuses: Record<string, number> = {}
  let bytes = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const answer = await readOne(i)
      statuses[answer.status] = (statuses[answer.status] ?? 0) + 1
      bytes += answer.bytes
    }),
  )
  console.log(JSON.stringify({ statuses, bytes, ms: performance.now() - started }))
}

async function stall(): Promise<void> {
  const sockets: net.Socket[] = []
  let connected = 0
  for (let i = 0; i < n; i++) {
    const socket = net.connect({ port: Number(port), host: hostname, localAddress: addressOf(i) }, () => {
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

async function poll(): Promise<void> {
  let done = false
  void (async () => {
    for await (const _ of Bun.stdin.stream()) {
      // Nothing is sent: the parent closes it to stop the polling.
    }
    done = true
  })()
  const latencies: number[] = []
  const statuses: Record<string, number> = {}
  // `poll ORIGIN PATH`: the path comes where the others have N.
  const target = origin + Bun.argv[4]
  while (!done) {
    const sent = performance.now()
    const response = await fetch(target)
    await response.arrayBuffer()
    const now = performance.now()
    latencies.push(now - sent)
    statuses[response.status] = (statuses[response.status] ?? 0) + 1
    if (sent + 10 > now) await Bun.sleep(sent + 10 - now)
  }
  console.log(JSON.stringify({ latencies, statuses }))
}

if (mode === 'read') await readAll()
else if (mode === 'stall') await stall()
else if (mode === 'poll') await poll()
else {
  console.error('usage: bounds-load.ts read|stall ORIGIN N PATH [ACCEPT_ENCODING|SECONDS], or poll ORIGIN PATH')
  process.exit(2)
}
process.exit(0)
