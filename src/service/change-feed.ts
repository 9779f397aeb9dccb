import { httpError, type JsonApiError } from '../jsonapi/errors'
import type { Change } from '../model/changes'
import { START_OF_FEED } from '../model/changes'
import type { ResourceDescription } from '../model/description'
import type { StoredRecord } from '../model/record'
import type { ResourceRegistry } from '../resources/registry'
import type { Store } from '../store/store'

/** A window of the feed as the service answers it. */
export interface ChangesPage {
  readonly changes: readonly Change[]
  /** The position to ask after next: past every change read (and kept), or the one asked after. */
  readonly next: string
  /** The newest change that can be read, or null. */
  readonly latest: string | null
  /** With include: the records changed that still exist, each once, in the order of their first change. */
  readonly included: readonly { readonly resource: ResourceDescription; readonly record: StoredRecord }[]
}

/** What the feed asks of a window, as parsed from a request (jsonapi/changes.ts). */
export interface FeedWindow {
  readonly after: string | null
  readonly size: number
  readonly types: readonly string[] | null
  readonly includeResources: boolean
}

/**
 * 410: the changes after the position asked for were pruned (CHANGES_RETENTION), or it is not of
 * this feed's history (the database was restored, copied or re-created since: docs/changes.md).
 */
export function feedGone(): JsonApiError {
  return httpError(
    410,
    'The changes after this id are no longer kept, or the id is from before the database was restored, copied or re-created: read the lists again, then follow the feed from its meta.latest',
  )
}

/**
 * The rules of GET /api/v1/changes: a window read from the store's change log, and where a live
 * stream starts. Shared by the page and the stream.
 */
export class ChangeFeed {
  constructor(
    private readonly registry: ResourceRegistry,
    private readonly store: Store,
  ) {}

  async page(window: FeedWindow): Promise<ChangesPage> {
    const read = await this.store.changes.read({ after: window.after, types: window.types, size: window.size })
    if (read.kind === 'gone') throw feedGone()
    // Read after the window (not beside it): the newest change is then never older than the page's last.
    const latest = await this.store.changes.latest()
    const included = window.includeResources ? await this.records(read.changes) : []
    return { changes: read.changes, next: read.next, latest, included }
  }

  /** Where a stream starts: after `after` (410 when pruned past it), or after the newest change now. */
  async streamStart(after: string | null): Promise<string> {
    if (after === null) return (await this.store.changes.latest()) ?? START_OF_FEED
    const read = await this.store.changes.read({ after, types: null, size: 1 })
    if (read.kind === 'gone') throw feedGone()
    return after
  }

  /** The current state of each changed record that still exists: one read per type. */
  private async records(changes: readonly Change[]): Promise<ChangesPage['included']> {
    const idsByType = new Map<string, Set<number>>()
    for (const change of changes) {
      const ids = idsByType.get(change.type) ?? new Set<number>()
      ids.add(change.recordId)
      idsByType.set(change.type, ids)
    }
    const found = new Map<string, StoredRecord>()
    await Promise.all(
      [...idsByType].map(async ([type, ids]) => {
        for (const record of await this.store.findMany(this.registry.get(type), [...ids])) {
          found.set(`${type}/${record.id}`, record)
        }
      }),
    )
    const included: { resource: ResourceDescription; record: StoredRecord }[] = []
    const seen = new Set<string>()
    for (const change of changes) {
      const key = `${change.type}/${change.recordId}`
      const record = found.get(key)
      if (!record || seen.has(key)) continue
      seen.add(key)
      included.push({ resource: this.registry.get(change.type), record })
    }
    return included
  }
}
