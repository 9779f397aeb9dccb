import type { ResourceDescription, TypoRule } from '../model/description'
import type { Id } from '../model/record'
import type { SearchWord } from '../model/search-words'
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
 * What a word matches in one field: the word as `written` (null: not), folded as the index folds
 * it, either as the beginning of a word (`prefix`) or as a whole word; or one of the `whole` words
 * (its forgiven forms, folded already). Both backends turn it into one index condition.
 */
export interface WordMatch {
  readonly written: string | null
  readonly prefix: boolean
  readonly whole: readonly string[]
}

/** A word of a search, with what it matches in each field. */
export interface SearchTerm {
  readonly word: string
  /** Whether the word matches the words it begins (the last word of a search), or whole words. */
  readonly prefix: boolean
  /** Whole words of the type's own vocabulary the word is forgiven as: [one edit, two edits]. */
  readonly forgiven: readonly (readonly string[])[]
  /** Per related field (by position): the ids of the related records it matches, ascending. */
  readonly related: readonly (readonly Id[] | undefined)[]
  /** Per related field: the typos a related record needs, where it needs any. */
  readonly relatedTypos: readonly (ReadonlyMap<Id, number> | undefined)[]
}

/** Words of a vocabulary near a word: the type's own (`field` null) or a related field's target's. */
export interface NearRequest {
  readonly field: number | null
  readonly range: NearRange
}

/** The related records of a related field that a word match names. */
export interface RelatedRequest {
  readonly field: number
  readonly match: WordMatch
}

/**
 * The reads that find the words' terms, each a batch answered in one round trip: first the words
 * of the vocabularies near each word (answered in order: string[][]), then the related records
 * each match names (Id[][]). A search of 10 words is two reads, not one per word and field.
 */
export type TermRead =
  | { readonly kind: 'near'; readonly requests: readonly NearRequest[] }
  | { readonly kind: 'related'; readonly requests: readonly RelatedRequest[] }

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
  search: readonly SearchWord[],
): Generator<TermRead, SearchTerm[], unknown> {
  const words = search.map((w) => w.text)
  const related = [...fields.entries()].filter(([, field]) => field.kind === 'related')
  // 1. The vocabularies near each word that may be forgiven: its own type's, each related field's.
  const near: NearRequest[] = []
  const nearAt = new Map<string, number>()
  const ask = (w: number, field: number | null, budget: number) => {
    if (budget === 0) return
    nearAt.set(`${w}:${field}`, near.length)
    near.push({ field, range: nearRange(words[w] as string, budget) })
  }
  for (const [w, word] of words.entries()) {
    ask(w, null, budgetOf(fields, word, 'attribute'))
    for (const [f, field] of related) ask(w, f, field.rule ? typoBudget(word, field.rule) : 0)
  }
  const nearWords = near.length === 0 ? [] : ((yield { kind: 'near', requests: near }) as string[][])
  const forgivenOf = (w: number, field: number | null, budget: number): string[][] => {
    const at = nearAt.get(`${w}:${field}`)
    const candidates = at === undefined ? [] : (nearWords[at] ?? [])
    return forgivenWords(words[w] as string, candidates, budget, search[w]?.prefix ?? false)
  }
  // 2. The related records each word names: as written, then at each level of typos.
  const asks: RelatedRequest[] = []
  const plan: { w: number; f: number; typos: number; at: number }[] = []
  for (const [w, word] of words.entries()) {
    for (const [f, field] of related) {
      plan.push({ w, f, typos: 0, at: asks.length })
      asks.push({ field: f, match: { written: word, prefix: search[w]?.prefix ?? false, whole: [] } })
      const byEdits = forgivenOf(w, f, field.rule ? typoBudget(word, field.rule) : 0)
      for (const [edits, whole] of byEdits.entries()) {
        if (whole.length === 0) continue
        plan.push({ w, f, typos: edits + 1, at: asks.length })
        asks.push({ field: f, match: { written: null, prefix: false, whole } })
      }
    }
  }
  const found = asks.length === 0 ? [] : ((yield { kind: 'related', requests: asks }) as Id[][])
  return words.map((word, w) => {
    // Each related record at the fewest typos it is named with: the steps go from none upwards.
    const typos: (Map<Id, number> | undefined)[] = fields.map((field) =>
      field.kind === 'related' ? new Map() : undefined,
    )
    for (const step of plan) {
      if (step.w !== w) continue
      const needed = typos[step.f] as Map<Id, number>
      for (const id of found[step.at] ?? []) if (!needed.has(id)) needed.set(id, step.typos)
    }
    const ids = typos.map((needed) => (needed ? [...needed.keys()].sort((a, b) => a - b) : undefined))
    for (const needed of typos) for (const [id, count] of needed ?? []) if (count === 0) needed?.delete(id)
    return {
      word,
      prefix: search[w]?.prefix ?? false,
      forgiven: forgivenOf(w, null, budgetOf(fields, word, 'attribute')),
      related: ids,
      relatedTypos: typos,
    }
  })
}

/** What a term matches in an attribute field with at most `typos` edits. */
export function wordMatch(term: SearchTerm, field: RankedField, typos: number = MAX_TYPOS): WordMatch {
  return { written: term.word, prefix: term.prefix, whole: field.rule ? term.forgiven.slice(0, typos).flat() : [] }
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
