import { httpError, type JsonApiError } from '../jsonapi/errors'
import { humanize } from '../jsonapi/messages'
import type { ResourceDescription } from '../model/description'
import type { Id, StoredRecord } from '../model/record'
import type { Expectation } from '../model/writes'
import type { Condition } from '../service/store-outcomes'
import type { Store } from '../store/store'
import { codingSuffix, negotiateCoding } from './compression'
import {
  type EntityTag,
  linkageState,
  matchesState,
  namesState,
  parseTags,
  recordState,
  versionTag,
  weaklyMatches,
} from './etag'
import { addVary, notModified, READ_CACHE_CONTROL, type ResponseSettings } from './responses'

/**
 * The preconditions of a write (RFC 9110 §13.1.1-2), compared with the stored state of what it
 * changes inside the write's own transaction: of two clients writing with the same tag, the first
 * changes the record and the second finds its state changed. `If-Match` holds when one of its
 * strong tags carries the current state (see etag.ts), or is `*`; `If-None-Match` holds when none
 * of its tags does, and `*` never holds for a record that exists.
 */
export class WritePreconditions {
  /** Which header refused the write, once one has. */
  refusedBy: 'If-Match' | 'If-None-Match' | undefined
  /**
   * With If-Match required: the records a to-many write would take in that its relationship's tag
   * does not cover (see forMembers), once it has refused them.
   */
  uncovered: readonly Id[] = []

  private constructor(
    private readonly match: '*' | readonly EntityTag[] | null,
    private readonly noneMatch: '*' | readonly EntityTag[] | null,
    /** REQUIRE_IF_MATCH: every record the write changes must be covered by the tag sent. */
    private readonly required: boolean,
  ) {}

  /**
   * The request's preconditions; undefined without any. `required` (REQUIRE_IF_MATCH) refuses a
   * write without If-Match with 428 before anything is read.
   */
  static of(headers: Headers, required: boolean): WritePreconditions | undefined {
    const match = headers.get('if-match')
    const noneMatch = headers.get('if-none-match')
    if (match === null && required) throw ifMatchRequired()
    if (match === null && noneMatch === null) return undefined
    return new WritePreconditions(
      match === null ? null : parseTags(match),
      noneMatch === null ? null : parseTags(noneMatch),
      required,
    )
  }

  /** For a write to a record or to one of its to-one relationships: the record's stored state. */
  forRecord(resource: ResourceDescription): Condition<StoredRecord> {
    return {
      expect: (current) => this.allows(recordState(resource, current)),
      refused: (what) => preconditionFailed(this.refusedBy, what, 'it'),
    }
  }

  /**
   * For a write to a to-many relationship: its current members. The relationship's tag covers its
   * members, whom a write may keep or let go; a record it takes in (`joining`, for an add or a
   * replace) changes that record's own to-one, from another owner or none, which the tag does not
   * cover. So where If-Match is required, such a write needs `*` (or the record's own PATCH with
   * its own tag): otherwise it is refused (428), its records (of type `target`) in `uncovered`.
   */
  forMembers(target: ResourceDescription, joining: readonly Id[] = []): Condition<readonly Id[]> {
    const expect: Expectation<readonly Id[]> = (members) => {
      if (!this.allows(linkageState(members))) return false
      if (!this.required || this.match === '*') return true
      const current = new Set(members)
      this.uncovered = [...new Set(joining.filter((id) => !current.has(id)))]
      return this.uncovered.length === 0
    }
    const refused = (what: string) =>
      this.uncovered.length > 0
        ? joiningNotCovered(what, target, this.uncovered)
        : preconditionFailed(this.refusedBy, what, 'them')
    return { expect, refused }
  }

  private allows(state: string): boolean {
    const { match, noneMatch } = this
    if (match !== null && !matchesState(match, state)) {
      this.refusedBy = 'If-Match'
      return false
    }
    if (noneMatch !== null && namesState(noneMatch, state)) {
      this.refusedBy = 'If-None-Match'
      return false
    }
    return true
  }
}

/**
 * The 412 for a write that preconditions refused (`refusedBy`, see WritePreconditions); `what`
 * names what changed ("Book 1", "The books of author 1").
 */
function preconditionFailed(
  refusedBy: WritePreconditions['refusedBy'],
  what: string,
  noun: 'it' | 'them',
): JsonApiError {
  if (refusedBy === 'If-None-Match') {
    // "Book 1 matches", "The books of author 1 match".
    return httpError(
      412,
      `${what} ${noun === 'it' ? 'matches' : 'match'} If-None-Match, so nothing was written (If-None-Match: * refuses any write to a record that exists)`,
      { header: 'If-None-Match' },
    )
  }
  const have = noun === 'it' ? 'has' : 'have'
  return httpError(
    412,
    `${what} ${have} changed since the ETag in If-Match was taken, so nothing was written; GET ${noun} again and retry with the new ETag`,
    { header: 'If-Match' },
  )
}

/**
 * The 428 of a to-many write, with If-Match required, that would take in records its relationship's
 * tag does not cover (`uncovered`: see WritePreconditions.forMembers).
 */
function joiningNotCovered(what: string, target: ResourceDescription, uncovered: readonly Id[]): JsonApiError {
  const records = `${humanize(uncovered.length === 1 ? target.singular : target.type)} ${uncovered.join(', ')}`
  return httpError(
    428,
    `This service requires If-Match on writes that change stored records, and the ETag of ${what.toLowerCase()} covers its members only: ${records.toLowerCase()} would join from elsewhere, changing ${uncovered.length === 1 ? 'its' : 'their'} own relationship. Send If-Match: * to write whatever is stored, or PATCH ${uncovered.length === 1 ? 'it' : 'each'} with ${uncovered.length === 1 ? 'its' : 'its own'} ETag`,
    { header: 'If-Match' },
  )
}

function ifMatchRequired(): JsonApiError {
  return httpError(
    428,
    'This service requires If-Match on writes that change stored records (PATCH, PUT, DELETE, and POST to a relationship): send the ETag of your last GET of this record or relationship (or * to write whatever is stored)',
    { header: 'If-Match' },
  )
}

/** Whether an If-None-Match value holds a weak tag, which may be a streamed answer's. */
export function holdsWeakTag(ifNoneMatch: string | null): ifNoneMatch is string {
  return ifNoneMatch?.includes('W/') === true
}

/**
 * A 304 before anything is read, for a GET or HEAD whose If-None-Match (`header`) holds the weak
 * tag of a streamed answer (see etag.ts) made at the store's current version: nothing has been
 * written since, so the answer would be the same. It costs one small read (the version), and only
 * for requests that send a weak tag. A long page of the change feed gives a version of its own
 * (ChangeFeed.version).
 */
export async function unchangedSinceStreamed(
  store: Pick<Store, 'version'>,
  request: Request,
  header: string,
  set: ResponseSettings,
): Promise<boolean> {
  const version = await store.version()
  if (version === null) return false
  // A streamed answer is always long enough to be compressed, when the client accepts it.
  const suffix = codingSuffix(negotiateCoding(request.headers.get('accept-encoding')))
  const tag = versionTag(version, request.url, suffix)
  if (!weaklyMatches(parseTags(header), tag)) return false
  set.headers.etag = tag
  set.headers['cache-control'] = READ_CACHE_CONTROL
  addVary(set.headers, 'Accept-Encoding')
  notModified(set)
  return true
}
