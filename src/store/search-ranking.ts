import type { ResourceDescription } from '../model/description'
import type { Id } from '../model/record'
import { searchOf } from '../resources/registry'

/**
 * How far a search is paged: numbered and offset pages of a search reach its first SEARCH_WINDOW
 * matches, and its total is counted no further. Past it the cost of a page would follow the
 * matches again (at 1,000,000 books, `book` matches every one); cursor pages, in id order, walk
 * a search to its end at the cost of a page each.
 */
export const SEARCH_WINDOW = 10_000

/**
 * Most tiers a ranked page asks for before it ranks every match instead. Each tier is one indexed
 * read (a few ms at 1,000,000 books); real searches need one to three, and only words that each
 * match several fields in few records go further.
 */
const TIER_BUDGET = 48

/** A search field as ranking sees it: its kind and weight, by its position in the description. */
export interface RankedField {
  readonly kind: 'attribute' | 'related'
  readonly weight: number
}

/** The search fields of a type, in the order of its description. */
export function rankedFields(resource: ResourceDescription): RankedField[] {
  return (searchOf(resource)?.fields ?? []).map((field) => ({
    kind: 'attribute' in field ? 'attribute' : 'related',
    weight: field.weight,
  }))
}

/** A word of a search and, per related field (by position), the ids of the related records it matches. */
export interface SearchTerm {
  readonly word: string
  /** Undefined at the positions of attribute fields. */
  readonly related: readonly (readonly Id[] | undefined)[]
}

/** One tier: these words match these attribute fields, and these references are among these ids. */
export interface Conjunction {
  /** Field position -> words that must all match that attribute (each as a prefix). */
  readonly attributes: ReadonlyMap<number, readonly string[]>
  /** Field position -> ids the record's reference must be one of (never empty). */
  readonly related: ReadonlyMap<number, readonly Id[]>
}

/** A record the search matches, with what ranking needs of it. */
export interface SearchMatch {
  readonly id: Id
  /** Per field position: the record's reference for related fields (null: none). */
  readonly refs: readonly (Id | null | undefined)[]
  /** Per word: a bit per attribute field position that the word matches in this record. */
  readonly hits: readonly number[]
}

/**
 * The reads ranking asks of a backend, all in one snapshot and all with the list's other filters
 * applied: the related records a word matches; how many records match the whole search (no
 * further than `cap`); every match with its references and hits; the first `limit` ids, ascending,
 * of one tier.
 */
export type SearchRead =
  | { readonly kind: 'related'; readonly field: number; readonly word: string }
  | { readonly kind: 'count'; readonly terms: readonly SearchTerm[]; readonly cap: number }
  | { readonly kind: 'matches'; readonly terms: readonly SearchTerm[] }
  | { readonly kind: 'first'; readonly conjunction: Conjunction; readonly limit: number }

export type SearchAnswer = readonly Id[] | number | readonly SearchMatch[]

/** A window of a ranked search, and its total: exact up to SEARCH_WINDOW, else SEARCH_WINDOW and capped. */
export interface RankedWindow {
  readonly ids: readonly Id[]
  readonly total: number
  readonly capped: boolean
}

/** Reads, for each word, the related records it matches in each related field. */
export function* searchTerms(
  fields: readonly RankedField[],
  words: readonly string[],
): Generator<SearchRead, SearchTerm[], SearchAnswer> {
  const terms: SearchTerm[] = []
  for (const word of words) {
    const related: (readonly Id[] | undefined)[] = []
    for (const [field, { kind }] of fields.entries()) {
      related.push(kind === 'related' ? ((yield { kind: 'related', field, word }) as Id[]) : undefined)
    }
    terms.push({ word, related })
  }
  return terms
}

/** Whether some record could match: every word has an attribute field, or related records it names. */
export function canMatch(fields: readonly RankedField[], terms: readonly SearchTerm[]): boolean {
  const anyAttribute = fields.some((f) => f.kind === 'attribute')
  return terms.length > 0 && (anyAttribute || terms.every((t) => t.related.some((ids) => (ids?.length ?? 0) > 0)))
}

/**
 * A record's score: for each word, the weight of the heaviest field it matches in the record,
 * summed. A title match (10) thus comes before an author-only match (2), before a collection-only
 * match (1), and more words matched in heavier fields first. Whole numbers: the order is exact.
 */
function scorer(fields: readonly RankedField[], terms: readonly SearchTerm[]): (match: SearchMatch) => number {
  const sets = terms.map((term) => term.related.map((ids) => (ids ? new Set(ids) : undefined)))
  return (match) => {
    let score = 0
    for (const [w, related] of sets.entries()) {
      let best = 0
      for (const [f, field] of fields.entries()) {
        if (field.weight <= best) continue
        const ref = match.refs[f]
        const hit =
          field.kind === 'attribute'
            ? ((match.hits[w] ?? 0) & (1 << f)) !== 0
            : ref != null && (related[f]?.has(ref) ?? false)
        if (hit) best = field.weight
      }
      score += best
    }
    return score
  }
}

/** Every match in ranked order: the highest score first, then ascending id. */
export function rankMatches(
  fields: readonly RankedField[],
  terms: readonly SearchTerm[],
  matches: readonly SearchMatch[],
): Id[] {
  const score = scorer(fields, terms)
  return matches
    .map((match) => ({ id: match.id, score: score(match) }))
    .sort((a, b) => b.score - a.score || a.id - b.id)
    .map((m) => m.id)
}

/** Every record of a ranked search, in order: what an unpaged list streams. */
export function* rankAll(
  fields: readonly RankedField[],
  words: readonly string[],
): Generator<SearchRead, Id[], SearchAnswer> {
  const terms = yield* searchTerms(fields, words)
  if (!canMatch(fields, terms)) return []
  return rankMatches(fields, terms, (yield { kind: 'matches', terms }) as SearchMatch[])
}

/**
 * A window of a ranked search. When at most SEARCH_WINDOW records match, all of them are read and
 * ranked: the cost follows at most that many. When more match, the tiers are read best first, each
 * in id order and only as far as the window needs: `book` at 1,000,000 books, where every title
 * matches, is one read of the first 20 title matches.
 */
export function* rankedWindow(
  fields: readonly RankedField[],
  words: readonly string[],
  offset: number,
  limit: number,
): Generator<SearchRead, RankedWindow, SearchAnswer> {
  const terms = yield* searchTerms(fields, words)
  if (!canMatch(fields, terms)) return { ids: [], total: 0, capped: false }
  const count = (yield { kind: 'count', terms, cap: SEARCH_WINDOW + 1 }) as number
  const capped = count > SEARCH_WINDOW
  const total = Math.min(count, SEARCH_WINDOW)
  if (count === 0 || offset >= count) return { ids: [], total, capped }
  if (!capped) {
    const ranked = rankMatches(fields, terms, (yield { kind: 'matches', terms }) as SearchMatch[])
    return { ids: ranked.slice(offset, offset + limit), total, capped }
  }
  const tiered = yield* byTiers(fields, terms, offset + limit)
  const ranked = tiered ?? rankMatches(fields, terms, (yield { kind: 'matches', terms }) as SearchMatch[])
  return { ids: ranked.slice(offset, offset + limit), total, capped }
}

/** One way for every word to match: a field per word (positions into the word's options). */
interface Tier {
  readonly picks: readonly number[]
  readonly score: number
  /** The first position a successor may move, so that each tier is reached once. */
  readonly from: number
}

/**
 * The first `need` records in ranked order, read tier by tier, best first; null when that would
 * take more than TIER_BUDGET reads. A tier's records all score its score or more; those that score
 * more were read in an earlier tier, which was read to its end before this one was started.
 */
function* byTiers(
  fields: readonly RankedField[],
  terms: readonly SearchTerm[],
  need: number,
): Generator<SearchRead, Id[] | null, SearchAnswer> {
  // Each word's fields that can match it, heaviest first. Where a word has a choice, an attribute
  // is asked first whether it holds the word at all (one indexed read of one row): `author` in no
  // title would otherwise double the tiers, every new one empty, each an indexed read of its own.
  // (A word with one field must match there: more than SEARCH_WINDOW records match the search.)
  const options: { field: number; weight: number }[][] = []
  for (const term of terms) {
    const possible: { field: number; weight: number }[] = []
    const candidates = fields.filter((field, f) => field.kind === 'attribute' || (term.related[f]?.length ?? 0) > 0)
    for (const [f, field] of fields.entries()) {
      if (field.kind === 'related' && (term.related[f]?.length ?? 0) === 0) continue
      if (field.kind === 'attribute' && candidates.length > 1) {
        const conjunction = { attributes: new Map([[f, [term.word]]]), related: new Map() }
        if (((yield { kind: 'first', conjunction, limit: 1 }) as Id[]).length === 0) continue
      }
      possible.push({ field: f, weight: field.weight })
    }
    options.push(possible.sort((a, b) => b.weight - a.weight))
  }
  if (options.some((possible) => possible.length === 0)) return []
  const scoreOf = (picks: readonly number[]) =>
    picks.reduce((sum, pick, w) => sum + (options[w]?.[pick]?.weight ?? 0), 0)
  const start = terms.map(() => 0)
  const queue: Tier[] = [{ picks: start, score: scoreOf(start), from: 0 }]
  const ranked: Id[] = []
  const seen = new Set<Id>()
  let reads = 0
  while (queue.length > 0 && ranked.length < need) {
    // The tiers of the best score left, all of them: their records are merged in id order.
    queue.sort((a, b) => b.score - a.score)
    const score = (queue[0] as Tier).score
    const level: Tier[] = []
    while (queue.length > 0 && (queue[0] as Tier).score === score) level.push(queue.shift() as Tier)
    for (const tier of level) {
      for (let w = tier.from; w < terms.length; w++) {
        if (tier.picks[w] === undefined || (tier.picks[w] as number) + 1 >= (options[w]?.length ?? 0)) continue
        const picks = tier.picks.map((p, i) => (i === w ? p + 1 : p))
        queue.push({ picks, score: scoreOf(picks), from: w })
      }
    }
    const wanted = need - ranked.length
    const found = new Set<Id>()
    for (const tier of level) {
      const conjunction = conjunctionOf(terms, options, tier.picks)
      if (!conjunction) continue
      if (++reads > TIER_BUDGET) return null
      const ids = (yield { kind: 'first', conjunction, limit: wanted + seen.size }) as Id[]
      for (const id of ids) if (!seen.has(id)) found.add(id)
    }
    const taken = [...found].sort((a, b) => a - b).slice(0, wanted)
    for (const id of taken) {
      ranked.push(id)
      seen.add(id)
    }
  }
  return ranked
}

/** The condition of a tier; null when two words' related matches have no record in common. */
function conjunctionOf(
  terms: readonly SearchTerm[],
  options: readonly { readonly field: number }[][],
  picks: readonly number[],
): Conjunction | null {
  const attributes = new Map<number, string[]>()
  const related = new Map<number, Id[]>()
  for (const [w, term] of terms.entries()) {
    const field = options[w]?.[picks[w] as number]?.field as number
    const ids = term.related[field]
    if (!ids) {
      attributes.set(field, [...(attributes.get(field) ?? []), term.word])
      continue
    }
    const before = related.get(field)
    const kept = before ? new Set(before) : undefined
    const common = kept ? ids.filter((id) => kept.has(id)) : [...ids]
    if (common.length === 0) return null
    related.set(field, common)
  }
  return { attributes, related }
}

/** A backend's answers to ranking's reads: at once (SQLite) or promised (PostgreSQL). */
export interface SearchReads<T> {
  related(field: number, word: string): T
  count(terms: readonly SearchTerm[], cap: number): T
  matches(terms: readonly SearchTerm[]): T
  first(conjunction: Conjunction, limit: number): T
}

function answer<T>(read: SearchRead, reads: SearchReads<T>): T {
  switch (read.kind) {
    case 'related':
      return reads.related(read.field, read.word)
    case 'count':
      return reads.count(read.terms, read.cap)
    case 'matches':
      return reads.matches(read.terms)
    case 'first':
      return reads.first(read.conjunction, read.limit)
  }
}

/** Runs ranking whose reads answer at once (SQLite, inside its read transaction). */
export function rankSync<T>(plan: Generator<SearchRead, T, SearchAnswer>, reads: SearchReads<SearchAnswer>): T {
  let step = plan.next()
  while (!step.done) step = plan.next(answer(step.value, reads))
  return step.value
}

/** Runs ranking whose reads are awaited, one after another (PostgreSQL). */
export async function rankAsync<T>(
  plan: Generator<SearchRead, T, SearchAnswer>,
  reads: SearchReads<Promise<SearchAnswer>>,
): Promise<T> {
  let step = plan.next()
  while (!step.done) step = plan.next(await answer(step.value, reads))
  return step.value
}
