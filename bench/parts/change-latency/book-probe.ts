/**
 * GET one book, one request at a time, for as long as the catch-up streams run: how a plain read
 * fares beside them. In a process of its own (book-probe-process.ts) on the client's core: the
 * streams' bytes go through the bench's own HTTP client, which a Worker would share, and its
 * reading keeps the bench's event loop busy; the probe shares only the core.
 */
import { pinning } from '../../harness/measure'

/** A probe's latencies (ms, of the 200 answers) and the requests that failed. */
export interface Probed {
  readonly ms: readonly number[]
  readonly errors: number
}

/** Starts the probe on `url` and waits for its first answer; the returned function stops it and gives what it measured. */
export async function startBookProbe(url: string): Promise<() => Promise<Probed>> {
  const child = Bun.spawn(
    [...pinning.client, 'bun', new URL('./book-probe-process.ts', import.meta.url).pathname, url],
    {
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'inherit',
    },
  )
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader()
  let pending = ''
  const nextLine = async (): Promise<string> => {
    for (;;) {
      const end = pending.indexOf('\n')
      if (end !== -1) {
        const line = pending.slice(0, end)
        pending = pending.slice(end + 1)
        return line
      }
      const { done, value } = await lines.read()
      if (done) throw new Error(`the book probe exited (code ${await child.exited}) before it answered`)
      pending += value
    }
  }
  const first = await nextLine()
  if (first !== 'ready') throw new Error(`the book probe said "${first}"`)
  return async () => {
    child.stdin.end()
    const probed = JSON.parse(await nextLine()) as Probed
    await child.exited
    return probed
  }
}

/** Probes `url` for `ms` milliseconds with nothing else running: the figures to read the others by. */
export async function probeAlone(url: string, ms: number): Promise<Probed> {
  const stop = await startBookProbe(url)
  await Bun.sleep(ms)
  return stop()
}
