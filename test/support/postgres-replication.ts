import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SQL } from 'bun'
import { clusterFolder, freePort, initCluster, run, startCluster } from './postgres-server'

/*
 * A primary and a hot standby streaming from it, for the tests of read replicas: initdb into a
 * temporary folder, the primary started on a free port, `pg_basebackup -R` of it into the same
 * folder, and the standby started on another port (as the `postgres` user when the run is root's).
 * The folder is named as the throwaway clusters' (postgres-server.ts): a run killed before it
 * could remove it leaves it to the next run that starts a cluster.
 */

export interface ReplicatedClusters {
  /** The primary's maintenance database, and the standby's, as `postgres`. */
  readonly primaryAdminUrl: string
  readonly replicaAdminUrl: string
  /** `database` on the primary and on the standby. */
  primaryUrl(database: string): string
  replicaUrl(database: string): string
  /** Stops the standby (fast: its sessions are cut). */
  stopReplica(): void
  /** Starts it again, on the same port, streaming from where it stopped. */
  startReplica(): void
  /**
   * Freezes every process of the standby (SIGSTOP): it keeps its connections and its port but
   * answers nothing, as a machine that hangs. `thaw` lets it go on (SIGCONT).
   */
  freezeReplica(): void
  thawReplica(): void
  /** Promotes the standby (`pg_ctl promote`, waiting until it takes writes): a new timeline. */
  promoteReplica(): void
  /** Stops both and removes the folder. */
  remove(): void
}

/** Whether `bin` holds the programs a replica needs beyond a cluster's own. */
export function holdsReplicationPrograms(bin: string): boolean {
  return existsSync(join(bin, 'pg_basebackup'))
}

function urlOf(port: number, database: string): string {
  return `postgres://postgres@127.0.0.1:${port}/${database}`
}

/** A primary on a free port and a standby of it on another, both of this process's own. */
export async function startReplicatedClusters(bin: string): Promise<ReplicatedClusters> {
  // However the run ends, the clusters go with it (the test's afterAll removes them first, normally).
  const { dir, prefix, remove } = clusterFolder(bin)
  const primary = join(dir, 'data')
  const replica = join(dir, 'replica')
  const primaryPort = freePort()
  try {
    initCluster(bin, prefix, primary)
    // wal_level replica and a few WAL senders are PostgreSQL's defaults; said here all the same.
    // Commits flushed before they are answered, as on a production server (the last -c wins).
    startCluster(bin, prefix, primary, dir, primaryPort, [
      'wal_level=replica',
      'max_wal_senders=4',
      'synchronous_commit=on',
    ])
    // -R writes primary_conninfo and standby.signal; -X stream copies the WAL made meanwhile.
    run(
      [
        ...prefix,
        join(bin, 'pg_basebackup'),
        '-D',
        replica,
        '-h',
        '127.0.0.1',
        '-p',
        String(primaryPort),
        '-U',
        'postgres',
        '-R',
        '-X',
        'stream',
        '-c',
        'fast',
        '--no-sync',
      ],
      'pg_basebackup',
    )
  } catch (error) {
    remove()
    throw error
  }
  const replicaPort = freePort()
  const startReplica = () => startCluster(bin, prefix, replica, dir, replicaPort, ['hot_standby=on'])
  try {
    startReplica()
  } catch (error) {
    remove()
    throw error
  }
  const signalReplica = (signal: 'SIGSTOP' | 'SIGCONT') => {
    const postmaster = Number(readFileSync(join(replica, 'postmaster.pid'), 'utf8').split('\n')[0])
    const children = Bun.spawnSync(['pgrep', '-P', String(postmaster)])
      .stdout.toString()
      .split('\n')
      .filter(Boolean)
    for (const pid of [postmaster, ...children.map(Number)]) process.kill(pid, signal)
  }
  return {
    primaryAdminUrl: urlOf(primaryPort, 'postgres'),
    replicaAdminUrl: urlOf(replicaPort, 'postgres'),
    primaryUrl: (database) => urlOf(primaryPort, database),
    replicaUrl: (database) => urlOf(replicaPort, database),
    stopReplica: () => run([...prefix, join(bin, 'pg_ctl'), '-D', replica, '-m', 'fast', '-w', 'stop'], 'pg_ctl stop'),
    startReplica,
    freezeReplica: () => signalReplica('SIGSTOP'),
    thawReplica: () => signalReplica('SIGCONT'),
    promoteReplica: () => run([...prefix, join(bin, 'pg_ctl'), '-D', replica, '-w', 'promote'], 'pg_ctl promote'),
    remove,
  }
}

/**
 * Resolves once the standby at `replicaAdminUrl` has replayed everything the primary at
 * `primaryAdminUrl` had written when this was called (a database made there, say).
 */
export async function replayed(primaryAdminUrl: string, replicaAdminUrl: string, timeoutMs = 20_000): Promise<void> {
  const primary = new SQL(primaryAdminUrl, { max: 1 })
  const replica = new SQL(replicaAdminUrl, { max: 1 })
  try {
    // Flushed: every commit answered before this call (synchronous_commit is on).
    const [{ lsn }] = await primary`SELECT pg_current_wal_flush_lsn()::text AS lsn`
    const until = Date.now() + timeoutMs
    for (;;) {
      const [{ caught }] = await replica`SELECT pg_last_wal_replay_lsn() >= ${lsn}::pg_lsn AS caught`
      if (caught) return
      if (Date.now() > until) throw new Error(`the standby has not replayed ${lsn} within ${timeoutMs} ms`)
      await Bun.sleep(20)
    }
  } finally {
    await primary.close()
    await replica.close()
  }
}
