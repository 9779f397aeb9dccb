import { SQL } from 'bun'

/**
 * The PostgreSQL server the bench creates its databases on: BENCH_POSTGRES_URL, else the tests'
 * POSTGRES_TEST_URL, else the local default. Its user must be allowed to create databases.
 */
export const postgresAdminUrl =
  process.env.BENCH_POSTGRES_URL || process.env.POSTGRES_TEST_URL || 'postgres://postgres@127.0.0.1:5432/test'

/** The URL of another database on the same server, same user. */
export function databaseUrl(name: string): string {
  const url = new URL(postgresAdminUrl)
  url.pathname = `/${name}`
  return url.toString()
}

/** Databases this run created, dropped by `dropDatabases` (also after a failure or Ctrl-C). */
const created: string[] = []

async function withAdmin<T>(work: (admin: SQL) => Promise<T>): Promise<T> {
  const admin = new SQL(postgresAdminUrl, { max: 1 })
  try {
    return await work(admin)
  } finally {
    await admin.close()
  }
}

/**
 * Creates an empty database, or a copy of `template` (a file-level copy: seconds for 100,000
 * books where seeding takes far longer). The template must have no connection open meanwhile.
 */
export async function createDatabase(template?: string): Promise<{ name: string; url: string }> {
  const name = `catalogue_bench_${process.pid}_${created.length + 1}`
  await withAdmin((admin) => admin.unsafe(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`))
  created.push(name)
  return { name, url: databaseUrl(name) }
}

export async function dropDatabases(): Promise<void> {
  if (created.length === 0) return
  const names = created.splice(0)
  await withAdmin(async (admin) => {
    for (const name of names.reverse()) await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  })
}

/** Drops one database `createDatabase` made, at once rather than at the end of the run. */
export async function dropDatabase(name: string): Promise<void> {
  await withAdmin((admin) => admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  const index = created.indexOf(name)
  if (index !== -1) created.splice(index, 1)
}

/** Runs `work` with a connection to the server's admin database (one connection, closed after). */
export const onAdmin = withAdmin
