import { STORE_SETTINGS, storeSettingsHelp } from '../config'
import type { ResourceDescription } from '../model/description'
import { resources } from '../resources/registry'
import type { TypeTally } from '../store/catalogue-copy'
import { StoreUnavailableError } from '../store/faults'
import type { Store } from '../store/store'
import { parseCommandArguments } from './arguments'
import type { Command } from './command'
import { FORMAT_NAME, fileOrder, headerLine, recordLine, toOneOf } from './formats/catalogue-file'
import { openCommandStore } from './open-store'
import { OutputFile } from './output-file'
import { count, Progress, say } from './progress'

/** Records read and written at a time: what the export holds in memory. */
export const EXPORT_BATCH_SIZE = 1000

const order = fileOrder(resources)

const help = `catalogue export: write the whole catalogue, ids included, as JSON Lines

Usage: catalogue export [options] [FILE]

Writes FILE, or (without FILE) standard output. The first line names the format
(${FORMAT_NAME}) and gives, per type, its number of records and the highest id it ever
handed out. Then one line per record, a JSON:API resource object with its id, attributes and
to-one relationships ("data":null for none), the types in this order (a record after those it
refers to), each in id order:
${order
  .map((resource) => {
    const relationships = toOneOf(resource).map(([name]) => `"${name}":{"data":...}`)
    const tail = relationships.length > 0 ? `,"relationships":{${relationships.join(',')}}` : ''
    return `  {"type":"${resource.type}","id":"7","attributes":{...}${tail}}`
  })
  .join('\n')}
Every record of every type is written, from one snapshot of the database: the file is consistent
however the service writes meanwhile. catalogue import restores it into an empty database of
either backend with the same ids (see its --help).

Options:
  --force                             replace FILE if it exists
${storeSettingsHelp(STORE_SETTINGS)}
  --help                              print this text and exit

Exit status: 0 written, 1 the database or the output failed part-way, 2 bad arguments.
`

/** `3 authors, 1 book collection and 5 books`: a count per type, in words. */
export function tallyText(counts: Iterable<readonly [ResourceDescription, number]>): string {
  const parts = [...counts].map(([resource, n]) => count(n, resource.title.toLowerCase()))
  return parts.length <= 1 ? (parts[0] ?? '') : `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`
}

/** Writes the header and every record of the snapshot; resolves to each type's number written. */
async function writeCatalogue(store: Store, output: OutputFile): Promise<Map<ResourceDescription, number>> {
  const snapshot = await store.openSnapshot()
  try {
    const tallies = new Map<ResourceDescription, TypeTally>()
    for (const resource of order) tallies.set(resource, await snapshot.tally(resource))
    await output.write(headerLine(tallies))
    const total = [...tallies.values()].reduce((sum, tally) => sum + tally.records, 0)
    const progress = new Progress('exporting', total, (done, all) => `${done} / ${all} records`)
    const written = new Map<ResourceDescription, number>()
    let done = 0
    for (const resource of order) {
      let n = 0
      for await (const batch of snapshot.records(resource, EXPORT_BATCH_SIZE)) {
        let text = ''
        for (const record of batch) text += recordLine(resource, record)
        await output.write(text)
        n += batch.length
        done += batch.length
        progress.update(done, total)
      }
      written.set(resource, n)
    }
    progress.finish()
    return written
  } finally {
    await snapshot.close()
  }
}

async function runExport(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<number> {
  const started = performance.now()
  const {
    values,
    positionals,
    store: settings,
  } = parseCommandArguments('export', argv, env, { force: { type: 'boolean' } }, 1, STORE_SETTINGS)
  const file = positionals[0]
  const output = file === undefined ? OutputFile.stdout() : OutputFile.create(file, values.force === true)
  let store: Store
  try {
    store = await openCommandStore(settings, resources, { existing: true })
  } catch (error) {
    await output.discard()
    throw error
  }
  let written: Map<ResourceDescription, number>
  try {
    written = await writeCatalogue(store, output)
    await output.close()
  } catch (error) {
    // The database failed (StoreUnavailableError) or the output did (a full disk, a closed pipe).
    if (!(error instanceof StoreUnavailableError) && typeof (error as { code?: unknown }).code !== 'string') throw error
    await output.discard()
    say(`catalogue export: ${(error as Error).message}; the export is not complete`)
    return 1
  } finally {
    await store.close()
  }
  const where = file === undefined ? '' : ` to ${file}`
  say(`exported ${tallyText(written)}${where} in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  return 0
}

export const exportCommand: Command = {
  name: 'export',
  summary: 'write the whole catalogue, ids included, as JSON Lines, which import restores',
  help,
  run: runExport,
}
