import { IdSet } from '../http/streaming/id-set'
import type { ResourceDescription } from '../model/description'
import type { Id, StoredRecord } from '../model/record'
import type { ResourceRegistry } from '../resources/registry'
import type { CatalogueRestore, Holdings } from '../store/catalogue-copy'
import { StoreUnavailableError } from '../store/faults'
import type { Store } from '../store/store'
import { MAX_REPORTED_LINES } from './book-import'
import { UsageError } from './command'
import { tallyText } from './export'
import { type FileTallies, parseRecordLine, toOneOf } from './formats/catalogue-file'
import { type Encoding, LineReader, TOO_LONG } from './formats/line-reader'
import { count, formatBytes, Progress, say } from './progress'

/** Records per transaction of a restore, all of one type. */
export const RESTORE_BATCH_SIZE = 5000

/** An export to restore, its first line read. */
export interface ExportFile {
  readonly path: string
  readonly size: number
  readonly encoding: Encoding
  readonly tallies: FileTallies
}

export interface RestoreOptions {
  readonly dryRun: boolean
  /** Into a catalogue that holds records: add those it lacks, the others being the same. */
  readonly merge: boolean
  /** The database as messages name it. */
  readonly where: string
}

/** Records of one type, in file order, with the lines they come from. */
interface Batch {
  readonly resource: ResourceDescription
  readonly records: StoredRecord[]
  readonly lines: number[]
}

/** A problem with the file: a line's, or (line 0) the whole file's. */
type Report = (line: number, reason: string) => void

/** The file read a second time is not as it was the first time. */
class FileChanged extends Error {}

/**
 * The file's records a batch at a time, each batch of one type, in file order. Without `report`
 * (the second reading) a line that does not read as it did the first time is an error.
 */
async function* batchesOf(
  file: ExportFile,
  registry: ResourceRegistry,
  progress: Progress,
  report?: Report,
): AsyncGenerator<Batch> {
  const reader = new LineReader(Bun.file(file.path).stream(), file.encoding)
  let batch: Batch | null = null
  const bad = (line: number, reason: string) => {
    if (!report) throw new FileChanged(`line ${line} of ${file.path} changed while it was imported (${reason})`)
    report(line, reason)
  }
  for await (const lines of reader.batches()) {
    for (const line of lines) {
      // The first line, read before.
      if (line.number === 1) continue
      if (line.fault) {
        bad(line.number, line.fault === 'too-long' ? TOO_LONG : 'not UTF-8 text')
        continue
      }
      if (line.text.trim() === '') continue
      const parsed = parseRecordLine(line.text, registry)
      if (typeof parsed === 'string') {
        bad(line.number, parsed)
        continue
      }
      if (batch && (batch.resource !== parsed.resource || batch.records.length >= RESTORE_BATCH_SIZE)) {
        yield batch
        batch = null
      }
      batch ??= { resource: parsed.resource, records: [], lines: [] }
      batch.records.push(parsed.record)
      batch.lines.push(line.number)
    }
    progress.update(reader.bytesRead)
  }
  if (batch) yield batch
}

/** Why a record cannot be restored where it stands in the file, or null. `seen`: each type's ids so far. */
function problemOf(
  resource: ResourceDescription,
  record: StoredRecord,
  lastId: Id,
  seen: ReadonlyMap<string, IdSet>,
): string | null {
  if (record.id > lastId) return `${resource.type} ${record.id} is above the last id its first line gives (${lastId})`
  if (seen.get(resource.type)?.has(record.id)) return `${resource.type} ${record.id} is in the file twice`
  for (const [name, relationship] of toOneOf(resource)) {
    const target = record.toOne[name]
    if (target != null && !seen.get(relationship.target)?.has(target)) {
      return `its ${name} (${relationship.target} ${target}) is not a record of an earlier line`
    }
  }
  return null
}

/**
 * The first reading: every line checked (JSON, type, id, attributes as the API checks them, each
 * reference to a record earlier in the file, no id twice or above the first line's last id), the
 * number of each type's records against the first line's, and with `compare`, the records the
 * database holds already. Resolves to the records per type the database lacks, and how many it holds.
 */
async function check(
  file: ExportFile,
  registry: ResourceRegistry,
  compare: CatalogueRestore | null,
): Promise<{ missing: Map<ResourceDescription, number>; present: number; problems: number }> {
  const progress = new Progress('checking', file.size, (done, total) => `${formatBytes(done)} / ${formatBytes(total)}`)
  const seen = new Map<string, IdSet>(registry.all.map((resource) => [resource.type, new IdSet()]))
  const counts = new Map<ResourceDescription, number>([...file.tallies.keys()].map((resource) => [resource, 0]))
  // Per type, the records the database holds already (with compare): a dry run counts the others.
  const presentOf = new Map<ResourceDescription, number>()
  let present = 0
  let problems = 0
  const report: Report = (line, reason) => {
    problems++
    if (problems <= MAX_REPORTED_LINES)
      progress.note(line === 0 ? `${file.path}: ${reason}` : `line ${line}: ${reason}`)
  }
  for await (const batch of batchesOf(file, registry, progress, report)) {
    const { resource } = batch
    const ids = seen.get(resource.type) as IdSet
    const lastId = file.tallies.get(resource)?.lastId ?? 0
    const sound: StoredRecord[] = []
    const soundLines: number[] = []
    batch.records.forEach((record, i) => {
      const line = batch.lines[i] as number
      const problem = problemOf(resource, record, lastId, seen)
      if (problem !== null) {
        report(line, problem)
        return
      }
      ids.add(record.id)
      counts.set(resource, (counts.get(resource) ?? 0) + 1)
      sound.push(record)
      soundLines.push(line)
    })
    if (compare && sound.length > 0) {
      const found = await compare.compare(resource, sound)
      present += found.present
      presentOf.set(resource, (presentOf.get(resource) ?? 0) + found.present)
      const conflicting = new Set(found.conflicts)
      sound.forEach((record, i) => {
        if (conflicting.has(record.id)) {
          report(soundLines[i] as number, `${resource.type} ${record.id} is stored with other fields`)
        }
      })
    }
  }
  for (const [resource, tally] of file.tallies) {
    const held = counts.get(resource) ?? 0
    if (problems === 0 && held !== tally.records) {
      report(
        0,
        `it holds ${held} ${resource.type} where its first line gives ${tally.records}: it is cut short, or was changed`,
      )
    }
  }
  progress.finish()
  const missing = new Map([...counts].map(([resource, n]) => [resource, n - (presentOf.get(resource) ?? 0)]))
  return { missing, present, problems }
}

/** Why a catalogue that holds records is refused, and what the operator can do. */
function refusal(where: string, held: Holdings, file: string): string {
  return `${where} already holds ${tallyText(held)}, and ${file} is a catalogue export, which restores records with their ids into an empty catalogue: restore it into an empty database (--create makes a new one), or give --merge to add the records the database lacks (those it holds under the same ids must be the same)`
}

/**
 * Restores an export (docs/operator-commands.md): the file checked whole first, nothing stored if
 * any of it is bad; then the id counters raised to the file's last ids and the records stored with
 * their ids, a batch of one type per transaction. Resolves to the exit code.
 */
export async function restoreExport(
  target: Store | (() => Promise<Store>),
  registry: ResourceRegistry,
  file: ExportFile,
  options: RestoreOptions,
  started: number,
): Promise<number> {
  // A database still to be created holds nothing, and is created only once the file is found sound.
  let store = typeof target === 'function' ? null : target
  let restore = store ? store.openRestore() : null
  try {
    const held = restore ? await restore.holdings() : new Map<ResourceDescription, number>()
    const holds = [...held.values()].some((records) => records > 0)
    if (holds && !options.merge) throw new UsageError(refusal(options.where, held, file.path))

    const { missing, present, problems } = await check(file, registry, holds ? restore : null)
    if (problems > 0) {
      if (problems > MAX_REPORTED_LINES) say(`... and ${problems - MAX_REPORTED_LINES} more problems`)
      throw new UsageError(
        `${file.path} is not a whole, sound catalogue export (${count(problems, 'problem')}): nothing was stored, since a restore stores all of a file or nothing`,
      )
    }
    const seconds = () => ((performance.now() - started) / 1000).toFixed(1)
    if (options.dryRun) {
      say(
        `dry run: would restore ${tallyText(missing)}, ${present} already present, in ${seconds()} s; nothing was stored`,
      )
      return 0
    }

    store ??= await (target as () => Promise<Store>)()
    restore ??= store.openRestore()
    const lastIds = new Map<ResourceDescription, Id>([...file.tallies].map(([resource, t]) => [resource, t.lastId]))
    const refused = await restore.begin(lastIds, !options.merge)
    if (refused) throw new UsageError(refusal(options.where, refused, file.path))
    const code = await write(restore, registry, file, options, seconds)
    // Restored into an empty catalogue: the change feed starts here (a follower reads the lists),
    // and a position from the database the export came from is 410 here, never taken for one of this.
    if (!options.merge) await store.changes.startOver()
    return code
  } finally {
    await restore?.close()
  }
}

/** The second reading: each batch stored in one transaction. */
async function write(
  restore: CatalogueRestore,
  registry: ResourceRegistry,
  file: ExportFile,
  options: RestoreOptions,
  seconds: () => string,
): Promise<number> {
  const progress = new Progress('restoring', file.size, (done, total) => `${formatBytes(done)} / ${formatBytes(total)}`)
  const added = new Map<ResourceDescription, number>([...file.tallies.keys()].map((resource) => [resource, 0]))
  let present = 0
  let firstLine = 2
  const stopped = (why: string) => {
    progress.finish()
    say(
      `catalogue import: ${why}; the records before line ${firstLine} were stored. Run the import again with --merge once it is fixed: it adds only what is missing`,
    )
    return 1
  }
  try {
    for await (const batch of batchesOf(file, registry, progress)) {
      firstLine = batch.lines[0] ?? firstLine
      const outcome = await restore.add(batch.resource, batch.records)
      if (!outcome.ok) {
        const ids = outcome.conflicts.slice(0, 10).join(', ')
        return stopped(`${batch.resource.type} ${ids} changed in ${options.where} since the file was checked`)
      }
      added.set(batch.resource, (added.get(batch.resource) ?? 0) + outcome.added)
      present += outcome.present
    }
  } catch (error) {
    if (error instanceof FileChanged) return stopped(error.message)
    if (!(error instanceof StoreUnavailableError)) throw error
    return stopped(`the database failed (${error.description}: ${error.message})`)
  }
  progress.finish()
  say(`restored ${tallyText(added)}, ${present} already present, in ${seconds()} s`)
  return 0
}
