/**
 * The catch-up case (issue 33): N streams opened at once from the start of a feed far behind
 * (`?page[after]=0`), each read as fast as the client can (catch-up-stream.ts), until each has
 * every change once and in order, or fails, or its deadline passes; meanwhile GET one book, one
 * request at a time (book-probe.ts). The service, then its reference, at each stream count (the
 * order reversed every other count, so that a slow spell falls on both).
 */
import { type Probed, probeAlone, startBookProbe } from './book-probe'
import type { CatchUpSetup } from './catch-up-setup'
import { type CatchUpStream, catchUp } from './catch-up-stream'

export type Server = 'service' | 'reference'

/** One server at one stream count. */
export interface CatchUpCase {
  readonly server: Server
  readonly streams: number
  readonly results: readonly CatchUpStream[]
  /** From the first request sent to the last stream done, ms. */
  readonly wallMs: number
  /** GET one book while the streams ran. */
  readonly during: Probed
}

/** Every case of one backend, and GET one book with nothing else running. */
export interface CatchUpBackend {
  readonly backend: CatchUpSetup['backend']
  readonly changes: number
  readonly seededMs: number
  readonly alone: Record<Server, Probed>
  readonly cases: readonly CatchUpCase[]
}

const BOOK = '/api/v1/books/1'

async function runCase(setup: CatchUpSetup, server: Server, streams: number, deadlineMs: number): Promise<CatchUpCase> {
  const { origin } = setup[server]
  const stopProbe = await startBookProbe(`${origin}${BOOK}`)
  const started = performance.now()
  const deadline = started + deadlineMs
  const url = `${origin}/api/v1/changes?page[after]=0`
  const results = await Promise.all(Array.from({ length: streams }, () => catchUp(url, setup.expected, deadline)))
  const wallMs = performance.now() - started
  const during = await stopProbe()
  // Let the server close what the client left before the next case.
  await Bun.sleep(300)
  const exited = setup.exited()
  if (exited.length > 0) throw new Error(`${setup.backend}, ${server}, ${streams} streams: ${exited.join('; ')}`)
  return { server, streams, results, wallMs, during }
}

const count = (n: number) => n.toLocaleString('en-US')

/** How the streams ended, plainly: "50 complete", "50 reset after 0 events (of 20,120)". */
export function outcomes(results: readonly CatchUpStream[], of: number): string {
  const by = new Map<string, CatchUpStream[]>()
  for (const result of results) by.set(result.outcome, [...(by.get(result.outcome) ?? []), result])
  return [...by]
    .map(([outcome, group]) => {
      if (outcome === 'complete') return `${group.length} complete`
      const got = group.map((r) => r.received)
      const low = Math.min(...got)
      const high = Math.max(...got)
      const events = low === high ? count(low) : `${count(low)}-${count(high)}`
      if (outcome === 'deadline') return `${group.length} incomplete at the deadline: got ${events} of ${count(of)}`
      if (outcome === 'reset') return `${group.length} reset after ${events} events (of ${count(of)})`
      if (outcome === 'ended') return `${group.length} ended by the server after ${events} events (of ${count(of)})`
      if (outcome === 'out of order') return `${group.length} out of order after ${events} events (of ${count(of)})`
      return `${group.length} refused`
    })
    .join(', ')
}

export async function catchUpBackend(
  setup: CatchUpSetup,
  streamCounts: readonly number[],
  deadlineMs: number,
): Promise<CatchUpBackend> {
  const alone = {
    service: await probeAlone(`${setup.service.origin}${BOOK}`, 1000),
    reference: await probeAlone(`${setup.reference.origin}${BOOK}`, 1000),
  }
  const cases: CatchUpCase[] = []
  for (const [i, streams] of streamCounts.entries()) {
    const order: Server[] = i % 2 === 0 ? ['service', 'reference'] : ['reference', 'service']
    for (const server of order) {
      const one = await runCase(setup, server, streams, deadlineMs)
      cases.push(one)
      process.stderr.write(
        `change-latency: catch-up on ${setup.backend}, ${server}, ${streams} streams: ${outcomes(one.results, setup.expected.length)} in ${(one.wallMs / 1000).toFixed(1)} s\n`,
      )
    }
  }
  return { backend: setup.backend, changes: setup.expected.length, seededMs: setup.seededMs, alone, cases }
}
