/**
 * The crowd of the search bench's concurrency round (bench/parts/search/concurrency.ts), in a
 * process of its own: `bun bench/parts/search/crowd.ts ORIGIN COPIES PATH` keeps COPIES requests
 * for PATH in flight, each sent again as soon as its answer is read, over a connection each. It
 * prints `started` once the first ones are sent, then `<ms> <status>` for each answer as it comes
 * (so that what it saw survives its being killed), and stops sending when its standard input
 * closes, exiting once the answers in flight are in.
 */
const [origin = '', copies = '4', path = '/'] = Bun.argv.slice(2)
let running = true

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
    console.log(`${(performance.now() - started).toFixed(2)} ${status}`)
  }
}

const all = Promise.all(Array.from({ length: Number(copies) }, copy))
console.log('started')
for await (const _ of Bun.stdin.stream()) {
  // Nothing is sent: the parent closes it to stop the crowd.
}
running = false
await all
process.exit(0)
