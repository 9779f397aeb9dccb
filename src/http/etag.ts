import type { ResourceDescription } from '../model/description'
import type { Id, StoredRecord } from '../model/record'

/**
 * Entity tags (RFC 9110 §8.8.3), in three forms:
 *
 * - `"<bytes>"`: an answer sent whole, tagged by a hash of its exact JSON text (a list, say).
 * - `"<state>.<bytes>"`: the same for an answer that shows one record (or one relationship's
 *   linkage), with a hash of that record's stored state in front. If-Match compares only the
 *   state part, so a tag from any representation of the record (`?fields=`, `?include=`) guards a
 *   write to it; a tag without one (a list's) never does.
 * - `W/"<version>"`: a streamed answer, whose bytes are not known when its headers go. It hashes
 *   the store's version read before the answer was read, and the request target; weak, since a
 *   write while the answer streams can change its bytes without changing the tag.
 *
 * An answer sent with a content coding adds it: `"<bytes>-gzip"` (RFC 9110 §8.8.3.3: different
 * encodings are different representations). Hashes are 64-bit xxHash3 in base 36: collisions
 * happen by accident with negligible odds, and one made on purpose could only hide or undo its
 * maker's own write (see docs/caching.md).
 */

function hash(text: string): string {
  return Bun.hash.xxHash3(text).toString(36)
}

/** The state of one stored record: its type, id, attributes and to-one ids, in description order. */
export function recordState(resource: ResourceDescription, record: StoredRecord): string {
  const values: unknown[] = [resource.type, record.id]
  for (const name in resource.attributes) values.push(record.attributes[name])
  for (const name in resource.relationships) {
    if (resource.relationships[name]?.kind === 'to-one') values.push(record.toOne[name] ?? null)
  }
  return hash(JSON.stringify(values))
}

/** The state of a to-many relationship: its members' ids, in id order. */
export function linkageState(members: readonly Id[]): string {
  return hash(`members:${members.join(',')}`)
}

/** The tag of an answer sent whole, with the state of what it shows if it shows one record. */
export function bytesTag(body: string, state: string | undefined, suffix: string): string {
  return state === undefined ? `"${hash(body)}${suffix}"` : `"${state}.${hash(body)}${suffix}"`
}

/** The weak tag of a streamed answer: the store's version before it was read, and the request target. */
export function versionTag(version: string, url: string, suffix: string): string {
  const target = url.slice(url.indexOf('/', url.indexOf('//') + 2))
  return `W/"${hash(`${version} ${target}`)}${suffix}"`
}

/** One member of an If-Match or If-None-Match list. */
export interface EntityTag {
  readonly weak: boolean
  /** Between the quotes. */
  readonly opaque: string
}

/** `"..."` or `W/"..."`, each with the characters RFC 9110 allows between the quotes. */
const tagPattern = /(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"/g

/**
 * An If-Match or If-None-Match value: `*`, or the entity tags it lists. What is not a tag is
 * skipped, so a malformed value lists fewer tags (none at all for garbage): an If-Match then
 * matches nothing and refuses the write, an If-None-Match matches nothing and lets the read answer.
 * Header values are bounded by the server's header size limit, and the scan is linear.
 */
export function parseTags(value: string): '*' | EntityTag[] {
  if (value.trim() === '*') return '*'
  const tags: EntityTag[] = []
  for (const match of value.matchAll(tagPattern))
    tags.push({ weak: match[1] !== undefined, opaque: match[2] as string })
  return tags
}

/** The opaque part of a tag as this service writes it: `W/"x"` -> `x`. */
function opaqueOf(tag: string): string {
  return tag.slice(tag.indexOf('"') + 1, -1)
}

/** Weak comparison (RFC 9110 §8.8.3.2), as If-None-Match uses: the opaque parts are equal. */
export function weaklyMatches(tags: '*' | readonly EntityTag[], current: string): boolean {
  if (tags === '*') return true
  const opaque = opaqueOf(current)
  return tags.some((tag) => tag.opaque === opaque)
}

/** Whether an If-Match value holds for a stored state: `*`, or a strong tag of ours that carries it. */
export function matchesState(tags: '*' | readonly EntityTag[], state: string): boolean {
  return tags === '*' || tags.some((tag) => stateOf(tag) === state)
}

/** Whether an If-None-Match value names a stored state: `*`, or any tag of ours for it, weak or strong. */
export function namesState(tags: '*' | readonly EntityTag[], state: string): boolean {
  return tags === '*' || tags.some((tag) => tag.opaque.startsWith(`${state}.`))
}

/** The record state in a strong tag of ours (`"<state>.<bytes>"`), or undefined for any other tag. */
export function stateOf(tag: EntityTag): string | undefined {
  if (tag.weak) return undefined
  const dot = tag.opaque.indexOf('.')
  return dot > 0 ? tag.opaque.slice(0, dot) : undefined
}
