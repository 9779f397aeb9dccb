import { expect, setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import { sharesServerConnections } from '../../src/store/postgres/pooler'
import { describeWithPgBouncer, startPgBouncer } from '../support/pgbouncer'
import { startPoolerLoad } from '../support/pooler-load'
import { describe, it, POSTGRES_SERVER } from '../support/postgres-tests'

// Several PgBouncers started and stopped: more than Bun's 5 s default on a busy shared machine.
setDefaultTimeout(60_000)

/*
 * What the start finds between the service and the server (src/store/postgres/pooler.ts): a pooler
 * in transaction (or statement) mode, which hands server connections from client to client and
 * loses named prepared statements, whatever its pool size and order; not a direct connection, nor
 * PgBouncer in session mode, with which prepared statements and LISTEN work.
 */

/** The database the probe connects to: the test server's own (it only asks for backend pids). */
const DATABASE = new URL(POSTGRES_SERVER).pathname.replace(/^\//, '') || 'postgres'

/** The probe as the start runs it: on a new client of one connection, prepared statements on or off. */
async function probe(url: string, prepare: boolean): Promise<boolean> {
  const options = { max: 1, prepare, connectionTimeout: 5 }
  const first = new SQL(url, options)
  try {
    return await sharesServerConnections(first, url, options)
  } finally {
    await first.close()
  }
}

/** `probe` `times` times, prepared statements on and off in turn, while other clients keep `url` busy (pooler-load.ts); what each found. */
async function probedUnderLoad(url: string, times: number): Promise<boolean[]> {
  const load = await startPoolerLoad(url)
  const found: boolean[] = []
  let ran = 0
  try {
    for (let i = 0; i < times; i++) found.push(await probe(url, i % 2 === 0))
  } finally {
    ran = await load.stop()
  }
  // The load ran all along: a few hundred statements at the least, even on a slow machine.
  expect(ran).toBeGreaterThan(times)
  return found
}

/** Runs `client` a few statements through `url` with prepared statements on, as the service would. */
async function usePrepared(url: string): Promise<void> {
  const client = new SQL(url, { max: 1, prepare: true })
  try {
    for (let i = 0; i < 3; i++) await client`SELECT ${i}::int AS i`.catch(() => {})
  } finally {
    await client.close()
  }
}

describeWithPgBouncer('the start finds a pooler that hands server connections from client to client', () => {
  const shapes = ['transaction', 'statement'].flatMap((mode) =>
    [1, 2, 5].flatMap((poolSize) => ['0', '1'].map((roundRobin) => ({ mode, poolSize, roundRobin }))),
  )
  /** Each shape probed on a fresh pool, on a full one, then after a client with prepared statements, prepared statements on or off. */
  const moments = ['fresh, prepared', 'full, prepared', 'full, unprepared', 'after prepared statements, prepared']
  const named = ({ mode, poolSize, roundRobin }: (typeof shapes)[number]) =>
    `${mode} mode, ${poolSize} server connections, round robin ${roundRobin}`

  it('finds PgBouncer in transaction and statement mode: 1, 2 or 5 server connections, round robin or not, pool fresh or full, prepared statements on or off', async () => {
    const found: string[] = []
    for (const shape of shapes) {
      const bouncer = await startPgBouncer(POSTGRES_SERVER, {
        poolSize: shape.poolSize,
        settings: { pool_mode: shape.mode, server_round_robin: shape.roundRobin },
      })
      try {
        const url = bouncer.url(DATABASE)
        const at = (moment: string, shared: boolean) => found.push(`${named(shape)}, ${moment}: ${shared}`)
        at('fresh, prepared', await probe(url, true))
        await bouncer.fill(DATABASE)
        at('full, prepared', await probe(url, true))
        at('full, unprepared', await probe(url, false))
        await usePrepared(url)
        at('after prepared statements, prepared', await probe(url, true))
      } finally {
        await bouncer.stop()
      }
    }
    expect(found).toEqual(shapes.flatMap((shape) => moments.map((moment) => `${named(shape)}, ${moment}: true`)))
  })

  it('finds nothing through PgBouncer in session mode (2 or 5 server connections, round robin or not, pool fresh or full), prepared statements on', async () => {
    const found: string[] = []
    const sessions = [2, 5].flatMap((poolSize) => ['0', '1'].map((roundRobin) => ({ poolSize, roundRobin })))
    for (const { poolSize, roundRobin } of sessions) {
      const bouncer = await startPgBouncer(POSTGRES_SERVER, {
        poolSize,
        settings: { pool_mode: 'session', server_round_robin: roundRobin },
      })
      try {
        const url = bouncer.url(DATABASE)
        const shape = `session mode, ${poolSize} server connections, round robin ${roundRobin}`
        found.push(`${shape}, fresh: ${await probe(url, true)}`)
        // Once PgBouncer has opened them all: a new client may then be given one another left.
        await bouncer.fill(DATABASE)
        found.push(`${shape}, full: ${await probe(url, true)}`)
      } finally {
        await bouncer.stop()
      }
    }
    expect(found).toEqual(
      sessions.flatMap(({ poolSize, roundRobin }) =>
        ['fresh', 'full'].map(
          (moment) => `session mode, ${poolSize} server connections, round robin ${roundRobin}, ${moment}: false`,
        ),
      ),
    )
  })

  it('finds PgBouncer in transaction mode every time while 8 other clients keep its 5 server connections busy (about 2,000 statements a second, last released first out): 40 probes', async () => {
    // Asked once, the probe missed this about one time in five; its rounds leave less than one in 10^8.
    const bouncer = await startPgBouncer(POSTGRES_SERVER, { poolSize: 5, settings: { server_round_robin: '0' } })
    try {
      const found = await probedUnderLoad(bouncer.url(DATABASE), 40)
      expect(found.filter((shared) => !shared)).toEqual([])
    } finally {
      await bouncer.stop()
    }
  })

  it('finds nothing through PgBouncer in session mode while 8 other clients keep it busy: 20 probes', async () => {
    const bouncer = await startPgBouncer(POSTGRES_SERVER, { poolSize: 12, settings: { pool_mode: 'session' } })
    try {
      const found = await probedUnderLoad(bouncer.url(DATABASE), 20)
      expect(found.filter((shared) => shared)).toEqual([])
    } finally {
      await bouncer.stop()
    }
  })

  it("does not wait on a session pool with no server connection left for the probe's second client: it finds nothing within seconds", async () => {
    const bouncer = await startPgBouncer(POSTGRES_SERVER, { poolSize: 1, settings: { pool_mode: 'session' } })
    try {
      const started = performance.now()
      expect(await probe(bouncer.url(DATABASE), true)).toBe(false)
      expect(performance.now() - started).toBeLessThan(10_000)
    } finally {
      await bouncer.stop()
    }
  })
})

describe('the start on a direct connection to the server', () => {
  it('finds no pooler, prepared statements on, however often it asks', async () => {
    for (let i = 0; i < 10; i++) expect(await probe(POSTGRES_SERVER, true)).toBe(false)
  })

  it('finds no pooler while 8 other clients keep the server busy: 40 probes', async () => {
    const found = await probedUnderLoad(POSTGRES_SERVER, 40)
    expect(found.filter((shared) => shared)).toEqual([])
  })
})
