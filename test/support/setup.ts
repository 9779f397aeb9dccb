import { afterAll, setDefaultTimeout } from 'bun:test'
import { dropTestDatabases } from './test-database'

// bunfig.toml has no setting for the per-test timeout: it is set here, before every test file.
// Generous, since CI's machine is shared; a test that hangs still fails.
setDefaultTimeout(30_000)

// A hook in the preload runs once, after every test file: the PostgreSQL databases the run created go.
afterAll(dropTestDatabases)
