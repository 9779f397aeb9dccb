/**
 * The process of book-probe.ts: GET one URL, one request at a time, until its stdin closes; then
 * prints `{ "ms": [...], "errors": n }` (the latencies of the 200 answers, the requests that failed).
 * Its first request (the connection's) is not counted: it prints `ready` once it is answered, so
 * that what it measures starts with the case.
 *
 * bun bench/parts/change-latency/book-probe-process.ts <url>
 */
const url = Bun.argv[2]
if (url === undefined) {
  console.error('book-probe: give the URL to GET')
  process.exit(2)
}

let running = true
const ms: number[] = []
let errors = 0

// The bench closes stdin to stop the probe.
const stdinClosed = (async () => {
  for await (const _ of Bun.stdin.stream()) {
    // Nothing is sent on stdin: only its end matters.
  }
  running = false
})()

async function get(): Promise<number> {
  const response = await fetch(url as string, { headers: { accept: 'application/vnd.api+json' } })
  await response.arrayBuffer()
  return response.status
}

// The connection's first request is not counted.
await get().catch(() => 0)
process.stdout.write('ready\n')
while (running) {
  const sent = performance.now()
  try {
    if ((await get()) === 200) ms.push(performance.now() - sent)
    else errors++
  } catch {
    errors++
    await Bun.sleep(10)
  }
}
await stdinClosed
process.stdout.write(`${JSON.stringify({ ms, errors })}\n`)
