import type { ResourceDescription, TypoRule } from '../model/description'
import type { Id } from '../model/record'
import { DEFAULT_TYPO_RULE, MAX_TYPOS, typoBudget } from '../model/typos'
import { searchOf } from '../resources/registry'
import { forgivenWords, type NearRange, nearRange } from './search-typos'

/** A search field as ranking sees it: its kind, weight, and the typos it forgives (null: none). */
export interface RankedField {
  readonly kind: 'attribute' | 'related'
  readonly weight: number
  readonly rule: TypoRule | null
}

/** The search fields of a type, in the order of its description. */
export function rankedFields(resource: ResourceDescription): RankedField[] {
  const search = searchOf(resource)
  const rule = search?.typos ?? DEFAULT_TYPO_RULE
  return (search?.fields ?? []).map((field) => ({
    kind: 'attribute' in field ? 'attribute' : 'related',
    weight: field.weight,
    rule: field.typos === false ? null : rule,
  }))
}

/**
 * What a word matches in one field: the words that begin with `prefix` (null: none), or one of
 * the `whole` words (its forgiven forms). Both backends turn it into one index condition.
 */
export interface WordMatch {
  readonly prefix: string | null
  readonly whole: readonly string[]
}

/** A word of a search, with what it matches in each field. */
export interface SearchTerm {
  readonly word: string
  /** Whole words of the type's own vocabulary the word is forgiven as: [one edit, two edits]. */
  readonly forgiven: readonly (readonly string[])[]
  /** Per related field (by position): the ids of the related records it matches, ascending. */
  readonly related: readonly (readonly Id[] | undefined)[]
  /** Per related field: the typos a related record needs, where it needs any. */
  readonly relatedTypos: readonly (ReadonlyMap<Id, number> | undefined)[]
}

/**
 * The reads that find a word's terms: the words of a vocabulary near it (the type's own, `field`
 * null, or a related field's target's), and the related records a word matches.
 */
export type TermRead =
  | { readonly kind: 'near'; readonly field: number | null; readonly range: NearRange }
  | { readonly kind: 'related'; readonly field: number; readonly match: WordMatch }

/** The fewest letters from which some field forgives a typo (a word shorter is taken as written). */
export function forgivesFrom(fields: readonly RankedField[]): number {
  return Math.min(...fields.map((f) => f.rule?.oneFrom ?? Number.POSITIVE_INFINITY))
}

/** The most edits a word may be forgiven in any field. */
function budgetOf(fields: readonly RankedField[], word: string, kind: RankedField['kind']): number {
  return Math.max(
    0,
    ...fields.filter((f) => f.kind === kind && f.rule).map((f) => typoBudget(word, f.rule as TypoRule)),
  )
}

/** Reads, for each word, its forgiven forms and the related records it matches in each related field. */
export function* searchTerms(
  fields: readonly RankedField[],
  words: readonly string[],
): Generator<TermRead, SearchTerm[], unknown> {
  const terms: SearchTerm[] = []
  for (const word of words) {
    const own = budgetOf(fields, word, 'attribute')
    const forgiven =
      own > 0
        ? forgivenWords(word, (yield { kind: 'near', field: null, range: nearRange(word, own) }) as string[], own)
        : forgivenWords(word, [], 0)
    const related: (readonly Id[] | undefined)[] = []
    const relatedTypos: (ReadonlyMap<Id, number> | undefined)[] = []
    for (const [field, { kind, rule }] of fields.entries()) {
      if (kind !== 'related') {
        related.push(undefined)
        relatedTypos.push(undefined)
        continue
      }
      const exact = (yield { kind: 'related', field, match: { prefix: word, whole: [] } }) as Id[]
      const found = new Set(exact)
      const typos = new Map<Id, number>()
      const budget = rule ? typoBudget(word, rule) : 0
      if (budget > 0) {
        const near = (yield { kind: 'near', field, range: nearRange(word, budget) }) as string[]
        for (const [edits, whole] of forgivenWords(word, near, budget).entries()) {
          if (whole.length === 0) continue
          for (const id of (yield { kind: 'related', field, match: { prefix: null, whole } }) as Id[]) {
            if (found.has(id)) continue
            found.add(id)
            typos.set(id, edits + 1)
          }
        }
      }
      related.push([...found].sort((a, b) => a - b))
      relatedTypos.push(typos)
    }
    terms.push({ word, forgiven, related, relatedTypos })
  }
  return terms
}

/** What a term matches in an attribute field with at most `typos` edits. */
export function wordMatch(term: SearchTerm, field: RankedField, typos: number = MAX_TYPOS): WordMatch {
  return { prefix: term.word, whole: field.rule ? term.forgiven.slice(0, typos).flat() : [] }
}

/** The related ids a term matches in related field `f` with at most `typos` edits. */
export function relatedAt(term: SearchTerm, f: number, typos: number): Id[] {
  const ids = term.related[f] ?? []
  const needed = term.relatedTypos[f]
  return needed && needed.size > 0 ? ids.filter((id) => (needed.get(id) ?? 0) <= typos) : [...ids]
}

/**
 * The typo levels at which a term matches more in attribute field `field` than at the level
 * before: 0 always, then each level with forgiven words.
 */
export function attributeLevels(term: SearchTerm, field: RankedField): number[] {
  if (!field.rule) return [0]
  return [0, ...term.forgiven.flatMap((whole, i) => (whole.length > 0 ? [i + 1] : []))]
}

/** The typo levels at which some related record of field `f` matches the term. */
export function relatedLevels(term: SearchTerm, f: number): number[] {
  const ids = term.related[f] ?? []
  const needed = term.relatedTypos[f]
  const levels = new Set(ids.map((id) => needed?.get(id) ?? 0))
  return [...levels].sort((a, b) => a - b)
}

/** Whether some record could match: every word has an attribute field, or related records it names. */
export function canMatch(fields: readonly RankedField[], terms: readonly SearchTerm[]): boolean {
  const anyAttribute = fields.some((f) => f.kind === 'attribute')
  return terms.length > 0 && (anyAttribute || terms.every((t) => t.related.some((ids) => (ids?.length ?? 0) > 0)))
}

/** Levels of typos a hit bit distinguishes: bit `field * TYPO_LEVELS + typos`. */
export const TYPO_LEVELS = MAX_TYPOS + 1

/** The bit of a match's hits that says: the word matches attribute `field` with at most `typos` edits. */
export function hitBit(field: number, typos: number): number {
  return 1 << (field * TYPO_LEVELS + typos)
}
