import type { TestApp } from './harness'

/** One line of the Prometheus text format: `name{label="value",...} value`. */
export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/
const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

/** Every sample of a scrape; comments and blank lines left out. A line that is neither fails. */
export function parseSamples(text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = sampleLine.exec(line)
    if (!match) throw new Error(`not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, name, value] of (match[2] ?? '').matchAll(labelPair)) labels[name as string] = value as string
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) })
  }
  return samples
}

/**
 * The text of GET /metrics, once the after-response hooks of the requests before it have run:
 * Elysia runs them on the turn after each answer, which a real client's next request comes after.
 */
export async function metricsText(t: TestApp): Promise<string> {
  await new Promise((resolve) => setImmediate(resolve))
  const answer = await t.send('GET', '/metrics')
  if (answer.status !== 200) throw new Error(`GET /metrics answered ${answer.status}: ${answer.text}`)
  return answer.text
}

/** The samples of GET /metrics (see metricsText). */
export async function scrape(t: TestApp): Promise<Sample[]> {
  return parseSamples(await metricsText(t))
}

/** The samples named `name` whose labels include `labels`. */
export function find(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return samples.filter(
    (sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  )
}

/** The value of the one sample named `name` with these labels; 0 when there is none (not yet counted). */
export function sampleValue(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = find(samples, name, labels)
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return found[0]?.value ?? 0
}
