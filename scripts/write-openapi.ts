/**
 * Writes the service's OpenAPI document, as GET /api/v1/openapi.json answers it with the default
 * settings, to the file named (dist/openapi.json unless given), for `bun run lint:openapi`.
 */
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { createApp } from '../src/http/app'
import { SPEC_PATH } from '../src/http/openapi/openapi'
import { createLogger } from '../src/logger'
import { resources } from '../src/resources/registry'
import { SqliteStore } from '../src/store/sqlite/sqlite-store'

const output = process.argv[2] ?? 'dist/openapi.json'
const store = SqliteStore.open(':memory:', resources)
const app = createApp({ store, logger: createLogger('silent') })
const response = await app.handle(new Request(`http://localhost${SPEC_PATH}`))
if (response.status !== 200) throw new Error(`GET ${SPEC_PATH} answered ${response.status}`)
mkdirSync(dirname(output), { recursive: true })
await Bun.write(output, await response.text())
await store.close()
console.log(`wrote ${output}`)
