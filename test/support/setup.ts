import { setDefaultTimeout } from 'bun:test'

// bunfig.toml has no setting for the per-test timeout: it is set here, before every test file.
// Generous, since CI's machine is shared; a test that hangs still fails.
setDefaultTimeout(30_000)
