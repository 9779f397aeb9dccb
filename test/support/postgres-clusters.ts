import { join } from 'node:path'
import { SQL } from 'bun'
import { clusterFolder, freePort, initCluster, run, startCluster } from './postgres-server'

/*
 * Two independent clusters of a test's own (initdb twice, each on a free port), for what crosses
 * servers: a dump restored onto another server, whose transaction ids are its own. Their folder is
 * named as the throwaway clusters' (postgres-server.ts), so a run killed before removing it leaves
 * it to the next run that starts one.
 */

export interface TwoClusters {
  /** `database` on the first cluster, and on the second, as `postgres`. */
  firstUrl(database: string): string
  secondUrl(database: string): string
  /** Stops both and removes the folder. */
  remove(): void
}

export function startTwoClusters(bin: string): TwoClusters {
  const { dir, prefix, remove } = clusterFolder(bin)
  const ports: number[] = []
  try {
    for (const data of ['data', 'second']) {
      initCluster(bin, prefix, join(dir, data))
      const port = freePort()
      startCluster(bin, prefix, join(dir, data), dir, port)
      ports.push(port)
    }
  } catch (error) {
    remove()
    throw error
  }
  const url = (port: number | undefined, database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`
  return { firstUrl: (db) => url(ports[0], db), secondUrl: (db) => url(ports[1], db), remove }
}

/** The server's next transaction id. */
export async function nextTransactionId(url: string): Promise<bigint> {
  const sql = new SQL(url, { max: 1 })
  try {
    const [row] = await sql`SELECT pg_current_xact_id()::text AS xid`
    return BigInt(row.xid)
  } finally {
    await sql.close()
  }
}

/**
 * Uses up `count` transaction ids of the server at `url` in one round trip (a subtransaction that
 * writes takes an id of its own), as a busy server's history would have.
 */
export async function useTransactionIds(url: string, count: number): Promise<void> {
  const sql = new SQL(url, { max: 1 })
  try {
    await sql.begin(async (tx) => {
      await tx`CREATE TEMP TABLE used_ids (i int) ON COMMIT DROP`
      await tx.unsafe(
        `DO $$ BEGIN FOR i IN 1..${count} LOOP BEGIN INSERT INTO used_ids VALUES (i); EXCEPTION WHEN others THEN NULL; END; END LOOP; END $$`,
      )
    })
  } finally {
    await sql.close()
  }
}

/** A cluster of a test's own, and a physical copy of it that can be put back in its place. */
export interface CopiedCluster {
  /** `database` on the cluster (the copy, once put back), as `postgres`. */
  url(database: string): string
  /** Copies the running cluster as a file system or VM snapshot would: `pg_basebackup`, WAL included. */
  copy(): void
  /** Stops the cluster and starts the copy on the same port, as it is: the same identifier and timeline. */
  putCopyBack(): void
  remove(): void
}

export function startCopiedCluster(bin: string): CopiedCluster {
  const { dir, prefix, remove } = clusterFolder(bin)
  const data = join(dir, 'data')
  const copy = join(dir, 'second')
  const port = freePort()
  try {
    initCluster(bin, prefix, data)
    startCluster(bin, prefix, data, dir, port)
  } catch (error) {
    remove()
    throw error
  }
  return {
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    copy: () =>
      run(
        [
          ...prefix,
          join(bin, 'pg_basebackup'),
          ...['-D', copy, '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-X', 'stream', '-c', 'fast'],
          '--no-sync',
        ],
        'pg_basebackup',
      ),
    putCopyBack: () => {
      run([...prefix, join(bin, 'pg_ctl'), '-D', data, '-m', 'fast', '-w', 'stop'], 'pg_ctl stop')
      startCluster(bin, prefix, copy, dir, port)
    },
    remove,
  }
}
