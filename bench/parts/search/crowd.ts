/**
 * The crowd of the search bench's concurrency round (bench/parts/search/concurrency.ts), in a
 * process of its own: `bun bench/parts/search/crowd.ts ORIGIN COPIES PATH` keeps COPIES requests
 * for PATH in flight, each sent again as soon as its answer is read, over a connection each; prints
 * `started` once the first ones are sent, stops sending when its standard input closes, waits for
 * the answers in flight, and prints `{"latencies":[ms,...],"statuses":{"200":n,...}}`.
 */
const [origin = '', copies = '4', path = '/'] = Bun.argv.slice(2)
let running = true
const latencies: number[] = []
const statuses: Record<string, number> = {}

async function copy(): Promise<void> {
  while (running) {
    const started = performance.now()
    let status = 'failed'
    try {
      const response = await fetch(origin + path, {
        headers: { accept: 'application/vnd.api+json', 'accept-encoding': 'identity' },
      })
      await response.arrayBuffer()
      status = String(response.status)
    } catch {
      // Counted as failed.
    }
    latencies.push(performance.now() - started)
    statuses[status] = (statuses[status] ?? 0) + 1
  }
}

const all = Promise.all(Array.from({ length: Number(copies) }, copy))
console.log('started')
for await (const _ of Bun.stdin.stream()) {
  // Nothing is sent: the parent closes it to stop the crowd.
}
running = false
await all
console.log(JSON.stringify({ latencies, statuses }))
process.exit(0)
