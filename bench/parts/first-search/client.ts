/**
 * The client of `bun run bench -- first-search`, started before the service so that its own start
 * is not counted: it waits for the service's origin on its standard input, then sends the first
 * search and, once that is answered, a second; prints `{"first":ms,"second":ms,"records":n}`.
 */
const JSON_API = 'application/vnd.api+json'

const reader = Bun.stdin.stream().getReader()
let origin = ''
while (!origin.includes('\n')) {
  const { done, value } = await reader.read()
  if (done) process.exit(2)
  origin += new TextDecoder().decode(value)
}
origin = origin.trim()

async function timed(word: string): Promise<{ ms: number; records: number }> {
  const sent = performance.now()
  const response = await fetch(`${origin}/api/v1/books?filter[search]=${word}`, { headers: { accept: JSON_API } })
  const document = (await response.json()) as { data?: unknown[] }
  if (response.status !== 200) throw new Error(`the search answered ${response.status}`)
  return { ms: performance.now() - sent, records: document.data?.length ?? 0 }
}

const first = await timed('hobbit')
const second = await timed('ring')
console.log(JSON.stringify({ first: first.ms, second: second.ms, records: first.records }))
process.exit(0)
