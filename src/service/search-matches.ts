import type { ResourceDescription, TypoRule } from '../model/description'
import type { Id, StoredRecord } from '../model/record'
import { narrowingWords, type SearchWord, searchWords } from '../model/search-words'
import { DEFAULT_TYPO_RULE, textWords, typoBudget, typosTo } from '../model/typos'
import { type ResourceRegistry, searchOf } from '../resources/registry'

/**
 * `meta.matches` of a record in a searched page (docs/search.md): for each text field the search
 * matched, where each matched word stands and whether it was forgiven typos, so that a page can
 * highlight it. Worked out here from the record's text and the search's words, by the rules the
 * stores match by (src/model/typos.ts); a related record's name is read for the page's records.
 */

/** One matched word of a field: its UTF-16 range [start, end) in the field's text, and its typos. */
export interface MatchedWord {
  readonly start: number
  readonly end: number
  readonly forgiven: boolean
  readonly typos: number
}

/** Field path (`name`, `author.name`) -> the matched words of its text, in order. */
export type RecordMatches = Readonly<Record<string, readonly MatchedWord[]>>

/** The words of `text` that some word of the search matches, each with the fewest typos it needs. */
export function matchedWords(text: string, searched: readonly SearchWord[], rule: TypoRule | null): MatchedWord[] {
  const found: MatchedWord[] = []
  for (const word of textWords(text)) {
    let best: number | null = null
    for (const query of searched) {
      const typos = typosTo(query.text, word.folded, rule ? typoBudget(query.text, rule) : 0, query.prefix)
      if (typos !== null && (best === null || typos < best)) best = typos
      if (best === 0) break
    }
    if (best !== null) found.push({ start: word.start, end: word.end, forgiven: best > 0, typos: best })
  }
  return found
}

/** A text field a search reads: its path in meta.matches, and where its text is. */
interface TextField {
  readonly path: string
  readonly attribute: string
  /** The relationship whose record holds the text; none for the record's own attribute. */
  readonly relationship?: { readonly name: string; readonly target: ResourceDescription }
  readonly rule: TypoRule | null
}

function textFields(registry: ResourceRegistry, resource: ResourceDescription): TextField[] {
  const search = searchOf(resource)
  const rule = search?.typos ?? DEFAULT_TYPO_RULE
  return (search?.fields ?? []).flatMap((field): TextField[] => {
    const fieldRule = field.typos === false ? null : rule
    if ('attribute' in field) return [{ path: field.attribute, attribute: field.attribute, rule: fieldRule }]
    const relationship = resource.relationships[field.relationship]
    if (relationship?.kind !== 'to-one') return []
    const target = registry.get(relationship.target)
    return (searchOf(target)?.fields ?? []).flatMap((own) =>
      'attribute' in own
        ? [
            {
              path: `${field.relationship}.${own.attribute}`,
              attribute: own.attribute,
              relationship: { name: field.relationship, target },
              rule: fieldRule,
            },
          ]
        : [],
    )
  })
}

/** Reads records of a type by id (the store's findMany). */
export type RecordsById = (resource: ResourceDescription, ids: readonly Id[]) => Promise<readonly StoredRecord[]>

/** The matches of each record of a page of a search for `text`; a record with none is left out. */
export async function pageMatches(
  registry: ResourceRegistry,
  resource: ResourceDescription,
  records: readonly StoredRecord[],
  text: string,
  read: RecordsById,
): Promise<Map<Id, RecordMatches>> {
  const fields = textFields(registry, resource)
  const forgivesFrom = Math.min(...fields.map((f) => f.rule?.oneFrom ?? Number.POSITIVE_INFINITY))
  const searched = narrowingWords(searchWords(text), forgivesFrom)
  const related = new Map<string, Map<Id, StoredRecord>>()
  for (const field of fields) {
    if (!field.relationship || related.has(field.relationship.name)) continue
    const name = field.relationship.name
    const ids = [...new Set(records.flatMap((r) => (r.toOne[name] == null ? [] : [r.toOne[name] as Id])))]
    const found = ids.length === 0 ? [] : await read(field.relationship.target, ids)
    related.set(name, new Map(found.map((r) => [r.id, r])))
  }
  const matches = new Map<Id, RecordMatches>()
  for (const record of records) {
    const byField: Record<string, MatchedWord[]> = {}
    for (const field of fields) {
      const owner = field.relationship
        ? related.get(field.relationship.name)?.get(record.toOne[field.relationship.name] ?? -1)
        : record
      const value = owner?.attributes[field.attribute]
      if (typeof value !== 'string') continue
      const words = matchedWords(value, searched, field.rule)
      if (words.length > 0) byField[field.path] = words
    }
    if (Object.keys(byField).length > 0) matches.set(record.id, byField)
  }
  return matches
}
