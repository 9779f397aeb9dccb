/**
 * The catch-up case of `bun run bench -- change-latency`: that it runs end to end on a small
 * backlog (the service beside its reference), and that its stream reader says plainly how a
 * stream ended short (reset, quiet past its deadline, an id out of place) rather than hang. What it
 * measures is not checked here.
 */
import { afterAll, describe, expect, it } from 'bun:test'
import { join } from 'node:path'
import { catchUp } from '../../bench/parts/change-latency/catch-up-stream'

const REPO = join(import.meta.dir, '..', '..')

const event = (id: number) =>
  `id: ${id}\nevent: change\ndata: {"type":"changes","id":"${id}","attributes":{"op":"create"},"relationships":{"resource":{"data":{"type":"books","id":"${id}"}}}}\n\n`

/** A server of one event stream: the opening, these events, then `end` (reset it, or stay quiet). */
function streamServer(ids: readonly number[], end: 'reset' | 'quiet') {
  return Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    fetch: () =>
      new Response(
        new ReadableStream<string>({
          start(controller) {
            controller.enqueue(': change stream\nretry: 2000\n\n')
            for (const id of ids) controller.enqueue(event(id))
            // As the service drops a stream whose client lets too much wait: an error with no reason.
            if (end === 'reset') setTimeout(() => controller.error(), 50)
          },
        }),
        { headers: { 'content-type': 'text/event-stream; charset=utf-8' } },
      ),
  })
}

const servers: ReturnType<typeof Bun.serve>[] = []
afterAll(() => {
  for (const server of servers) server.stop(true)
})
function url(ids: readonly number[], end: 'reset' | 'quiet'): string {
  const server = streamServer(ids, end)
  servers.push(server)
  return `http://127.0.0.1:${server.port}/api/v1/changes?page[after]=0`
}

const FEED = ['1', '2', '3', '4', '5']
const soon = () => performance.now() + 2000

describe('catchUp (a catch-up stream of the bench)', () => {
  it('is complete once it has every change of the feed, in order', async () => {
    const stream = await catchUp(url([1, 2, 3, 4, 5], 'quiet'), FEED, soon())
    expect(stream.outcome).toBe('complete')
    expect(stream.received).toBe(5)
  })

  it('says how many changes came before the server reset the connection', async () => {
    const stream = await catchUp(url([1, 2, 3], 'reset'), FEED, soon())
    expect(stream.outcome).toBe('reset')
    expect(stream.received).toBe(3)
  })

  it('says the stream was reset after 0 events when none came', async () => {
    const stream = await catchUp(url([], 'reset'), FEED, soon())
    expect(stream.outcome).toBe('reset')
    expect(stream.received).toBe(0)
  })

  it('gives up at its deadline when the stream goes quiet before the end of the feed', async () => {
    const stream = await catchUp(url([1, 2], 'quiet'), FEED, performance.now() + 300)
    expect(stream.outcome).toBe('deadline')
    expect(stream.received).toBe(2)
    expect(stream.detail).toBe('got 2 of 5')
  })

  it('stops at a change out of its place: missed, twice, or out of order', async () => {
    for (const ids of [
      [1, 3, 4, 5],
      [1, 2, 2, 3, 4, 5],
      [1, 2, 4, 3, 5],
    ]) {
      const stream = await catchUp(url(ids, 'quiet'), FEED, soon())
      expect(stream.outcome).toBe('out of order')
    }
  })
})

describe('bun run bench -- change-latency --cases catch-up', () => {
  it('reads a small backlog to its end on SQLite, the service beside its reference', async () => {
    const child = Bun.spawn(
      [
        'bun',
        'bench/run.ts',
        'change-latency',
        '--cases',
        'catch-up',
        '--backends',
        'sqlite',
        '--backlog',
        '300',
        '--streams',
        '1,3',
        '--quick',
      ],
      { cwd: REPO, stdout: 'pipe', stderr: 'pipe' },
    )
    const [stdout, stderr, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ])
    expect(stderr).toContain('catch-up on sqlite: 420 changes in the feed')
    expect(stdout).toMatch(/\| SQLite, one process +\| +3 \| +service \| +3 complete \|/)
    expect(stdout).toMatch(/\| SQLite, one process +\| +3 \| +reference \| +3 complete \|/)
    expect(stdout).toContain('Every stream got every change of the feed once, in order.')
    expect(code).toBe(0)
  }, 60_000)

  it('refuses more streams than it can open at once, with exit 2', async () => {
    const child = Bun.spawn(['bun', 'bench/run.ts', 'change-latency', '--cases', 'catch-up', '--streams', '300'], {
      cwd: REPO,
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited])
    expect(code).toBe(2)
    expect(stderr).toContain('the catch-up case opens at most 256 streams at once')
  })
})
