import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resources } from '../../src/resources/registry'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import { describeStoreContract } from './contract'

describeStoreContract(
  'SqliteStore',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'catalogue-contract-'))
    const store = SqliteStore.open(join(dir, 'catalogue.db'), resources)
    return {
      store,
      cleanup: async () => {
        await store.close()
        rmSync(dir, { recursive: true, force: true })
      },
    }
  },
  { gaplessIds: true },
)
