import { afterAll, setDefaultTimeout } from 'bun:test'
import { stopThrowawayCluster } from './postgres-server'
import { dropTestDatabases } from './test-database'

// Generous, since CI's machine is shared; a test that hangs still fails. bunfig.toml has no key for
// it, and Bun applies setDefaultTimeout to one file only (here: the first): the files that start
// processes or use PostgreSQL call it themselves, and `bun test --timeout 30000` (.ci/run,
// package.json's test:postgres) gives it to every file.
setDefaultTimeout(30_000)

// A hook in the preload runs once, after every test file: the PostgreSQL databases the run created
// go, then the throwaway cluster, if the run started one (postgres-server.ts).
afterAll(async () => {
  await dropTestDatabases()
  stopThrowawayCluster()
})
