import type { Id } from '../model/record'
import type { SearchWord } from '../model/search-words'
import {
  attributeLevels,
  canMatch,
  hitBit,
  type RankedField,
  relatedAt,
  relatedLevels,
  type SearchTerm,
  searchTerms,
  type TermRead,
  TYPO_LEVELS,
  type WordMatch,
  wordMatch,
} from './search-terms'

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

/** Most matches a ranked page reads and ranks all of; past it, the tiers best first. */
const RANK_ALL_MAX = 1_000

/** One tier: these words match these attribute fields, and these references are among these ids. */
export interface Conjunction {
  /** Field position -> what each of its words must match in that attribute (all of them). */
  readonly attributes: ReadonlyMap<number, readonly WordMatch[]>
  /** Field position -> ids the record's reference must be one of (never empty). */
  readonly related: ReadonlyMap<number, readonly Id[]>
}

/** A record the search matches, with what ranking needs of it. */
export interface SearchMatch {
  readonly id: Id
  /** Per field position: the record's reference for related fields (null: none). */
  readonly refs: readonly (Id | null | undefined)[]
  /** Per word: the bits (hitBit) of the attribute fields it matches in this record, and with how many typos. */
  readonly hits: readonly number[]
}

/**
 * The reads ranking asks of a backend, all in one snapshot and all with the list's other filters
 * applied: the related records a word matches; how many records match the whole search (no
 * further than `cap`); every match with its references and hits; the first `limit` ids, ascending,
 * of one tier.
 */
export type SearchRead =
  | TermRead
  | { readonly kind: 'count'; readonly terms: readonly SearchTerm[]; readonly cap: number }
  | { readonly kind: 'matches'; readonly terms: readonly SearchTerm[] }
  | { readonly kind: 'first'; readonly conjunction: Conjunction; readonly limit: number }

export type SearchAnswer =
  | readonly Id[]
  | readonly (readonly string[])[]
  | readonly (readonly Id[])[]
  | number
  | readonly SearchMatch[]

/** A window of a ranked search, and its total: exact up to SEARCH_WINDOW, else SEARCH_WINDOW and capped. */
export interface RankedWindow {
  readonly ids: readonly Id[]
  readonly total: number
  readonly capped: boolean
}

/**
 * What one typo costs in a score: more than every weight of every word together, so that fewer
 * typos always rank first, and today's weights only among records with as many.
 */
const TYPO_COST = 1_000_000

/**
 * A record's score: for each word, the field it matches with the fewest typos, the heaviest of
 * those, its weight less TYPO_COST per typo, summed. So the fewest typos in all come first; among
 * as many, a title match (10) before an author-only match (2), before a collection-only match (1),
 * and more words matched in heavier fields first. Whole numbers: the order is exact.
 */
function scorer(fields: readonly RankedField[], terms: readonly SearchTerm[]): (match: SearchMatch) => number {
  const sets = terms.map((term) => term.related.map((ids) => (ids ? new Set(ids) : undefined)))
  return (match) => {
    let score = 0
    for (const [w, related] of sets.entries()) {
      let best = Number.NEGATIVE_INFINITY
      for (const [f, field] of fields.entries()) {
        let typos: number | undefined
        if (field.kind === 'attribute') {
          const bits = match.hits[w] ?? 0
          for (let d = 0; d < TYPO_LEVELS && typos === undefined; d++) if ((bits & hitBit(f, d)) !== 0) typos = d
        } else {
          const ref = match.refs[f]
          if (ref != null && related[f]?.has(ref)) typos = terms[w]?.relatedTypos[f]?.get(ref) ?? 0
        }
        if (typos !== undefined) best = Math.max(best, field.weight - typos * TYPO_COST)
      }
      score += Number.isFinite(best) ? best : 0
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
  words: readonly SearchWord[],
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
  words: readonly SearchWord[],
  offset: number,
  limit: number,
): Generator<SearchRead, RankedWindow, SearchAnswer> {
  const terms = yield* searchTerms(fields, words)
  if (!canMatch(fields, terms)) return { ids: [], total: 0, capped: false }
  const count = (yield { kind: 'count', terms, cap: SEARCH_WINDOW + 1 }) as number
  const capped = count > SEARCH_WINDOW
  const total = Math.min(count, SEARCH_WINDOW)
  if (count === 0 || offset >= count) return { ids: [], total, capped }
  if (count <= RANK_ALL_MAX) {
    const ranked = rankMatches(fields, terms, (yield { kind: 'matches', terms }) as SearchMatch[])
    return { ids: ranked.slice(offset, offset + limit), total, capped }
  }
  const tiered = yield* byTiers(fields, terms, offset + limit)
  const ranked = tiered ?? rankMatches(fields, terms, (yield { kind: 'matches', terms }) as SearchMatch[])
  return { ids: ranked.slice(offset, offset + limit), total, capped }
}

/** One way for a word to match: a field, with at most this many typos. */
interface Option {
  readonly field: number
  readonly typos: number
  readonly weight: number
}

/** One way for every word to match: an option per word (positions into the word's options). */
interface Tier {
  readonly picks: readonly number[]
  readonly score: number
  /** The first position a successor may move, so that each tier is reached once. */
  readonly from: number
}

/**
 * Each word's ways to match, best first: a field at a typo level, worth the field's weight less
 * TYPO_COST a typo. Where a word has a choice, an attribute is asked first whether it holds the
 * word at that level at all (one indexed read of one row): `author` in no title would otherwise
 * double the tiers, every new one empty, each an indexed read of its own. (A word with one option
 * must match there: more than SEARCH_WINDOW records match the search.)
 */
function* optionsOf(fields: readonly RankedField[], term: SearchTerm): Generator<SearchRead, Option[], SearchAnswer> {
  const all: Option[] = []
  for (const [f, field] of fields.entries()) {
    const levels = field.kind === 'attribute' ? attributeLevels(term, field) : relatedLevels(term, f)
    for (const typos of levels) all.push({ field: f, typos, weight: field.weight - typos * TYPO_COST })
  }
  const possible: Option[] = []
  for (const option of all) {
    const field = fields[option.field] as RankedField
    if (field.kind === 'attribute' && all.length > 1) {
      const only: WordMatch =
        option.typos === 0
          ? { written: term.word, prefix: term.prefix, whole: [] }
          : { written: null, prefix: false, whole: term.forgiven[option.typos - 1] ?? [] }
      const conjunction = { attributes: new Map([[option.field, [only]]]), related: new Map() }
      if (((yield { kind: 'first', conjunction, limit: 1 }) as Id[]).length === 0) continue
    }
    possible.push(option)
  }
  return possible.sort((a, b) => b.weight - a.weight)
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
  const options: Option[][] = []
  for (const term of terms) options.push(yield* optionsOf(fields, term))
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
      const conjunction = conjunctionOf(fields, terms, options, tier.picks)
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
  fields: readonly RankedField[],
  terms: readonly SearchTerm[],
  options: readonly Option[][],
  picks: readonly number[],
): Conjunction | null {
  const attributes = new Map<number, WordMatch[]>()
  const related = new Map<number, Id[]>()
  for (const [w, term] of terms.entries()) {
    const option = options[w]?.[picks[w] as number]
    if (!option) return null
    const { field, typos } = option
    if ((fields[field] as RankedField).kind === 'attribute') {
      const match = wordMatch(term, fields[field] as RankedField, typos)
      attributes.set(field, [...(attributes.get(field) ?? []), match])
      continue
    }
    const ids = relatedAt(term, field, typos)
    const before = related.get(field)
    const kept = before ? new Set(before) : undefined
    const common = kept ? ids.filter((id) => kept.has(id)) : ids
    if (common.length === 0) return null
    related.set(field, common)
  }
  return { attributes, related }
}
