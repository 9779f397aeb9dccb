import { afterEach, beforeEach, describe } from 'bun:test'
import type { Store } from '../../../src/store/store'
import { describeChangeLogContract } from './changes'
import type { BackendPromises, ContractContext, OpenStore } from './context'
import { describeCopyContract } from './copies'
import { describeImportContract } from './imports'
import { describeListContract } from './lists'
import { describeRecordContract } from './records'
import { describeSearchScanContract } from './searches'
import { describeTotalContract } from './totals'
import { describeWriteContract } from './writes'

export type { BackendPromises, OpenStore } from './context'

/**
 * The promises of the Store interface (src/store/store.ts), checked against one backend: each
 * test gets a fresh, empty store from `openStore` and reads back only through the Store. A backend
 * runs it with one line: `describeStoreContract('PostgresStore', openPostgresStore, { gaplessIds: false })`.
 */
export function describeStoreContract(name: string, openStore: OpenStore, promises: BackendPromises): void {
  describe(`${name} (Store contract)`, () => {
    let current: { store: Store; cleanup: () => Promise<void> } | undefined
    const context: ContractContext = {
      promises,
      store: () => {
        if (!current) throw new Error('no store is open')
        return current.store
      },
    }
    beforeEach(async () => {
      current = await openStore()
    })
    afterEach(async () => {
      const opened = current
      current = undefined
      await opened?.cleanup()
    })
    describeRecordContract(context)
    describeListContract(context)
    describeSearchScanContract(context)
    describeWriteContract(context)
    describeCopyContract(context)
    describeImportContract(context)
    describeTotalContract(context)
    describeChangeLogContract(context)
  })
}
