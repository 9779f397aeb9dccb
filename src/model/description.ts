/**
 * The declarative description of a resource type. One of these per type drives the routes,
 * request validation, serialization, storage queries and the OpenAPI document.
 */

/** A string attribute, stored in one TEXT column. */
export interface StringAttribute {
  readonly kind: 'string'
  readonly column: string
  /** Required on create; on update an absent value is left as it is. */
  readonly required: boolean
  /** Maximum length in characters (Unicode code points, as JSON Schema counts). */
  readonly maxLength: number
  /**
   * A name: one line of text, refused with a control character or a line break in it, and stored
   * in Unicode NFC (composed), so that `É` typed as one character or as `E` and an accent is one
   * name to filters, sorting and the import. Other strings are stored as sent.
   */
  readonly isName: boolean
  readonly description: string
  /**
   * A value for the OpenAPI document's examples: that of the record the README's example session
   * creates first (J.R.R. Tolkien), so that the docs page's "Test Request" works on that data.
   */
  readonly example: string
}

export type AttributeDescription = StringAttribute

/** A to-one relationship, stored as a foreign-key column on this type's table. */
export interface ToOneRelationship {
  readonly kind: 'to-one'
  /** Plural type name of the related resource. */
  readonly target: string
  readonly column: string
  /** A required relationship cannot be null: creating without it fails with "<Name> must exist". */
  readonly required: boolean
  /** The attribute alias clients may use instead of relationship linkage (`author_id`). */
  readonly idAttribute: string
  /** What deleting the related record does to this one. */
  readonly onTargetDelete: 'restrict' | 'nullify'
  readonly description: string
}

/** A to-many relationship: the inverse of a to-one relationship on the target type. */
export interface ToManyRelationship {
  readonly kind: 'to-many'
  readonly target: string
  /** Name of the to-one relationship on the target that points back here. */
  readonly inverse: string
  readonly description: string
}

export type RelationshipDescription = ToOneRelationship | ToManyRelationship

/**
 * One thing a full-text search of a type matches, and how much a match in it counts towards
 * relevance: an attribute of the type itself (a column of its own search index), or a to-one
 * relationship, whose target's own search index is matched. Related names are never copied into
 * this type's index, so renaming an author costs the same whether they have 1 book or 10,000.
 */
export type SearchField =
  | { readonly attribute: string; readonly weight: number; readonly typos?: false }
  | { readonly relationship: string; readonly weight: number; readonly typos?: false }

/**
 * When a word of a search is forgiven typos (docs/search.md): from `oneFrom` letters one edit,
 * from `twoFrom` two (Damerau-Levenshtein: a letter changed, left out, added, or two neighbours
 * swapped), the first letter always right, and only as a whole word of the catalogue. A field
 * with `typos: false` matches its words as written.
 */
export interface TypoRule {
  readonly oneFrom: number
  readonly twoFrom: number
}

/**
 * A list filter, `filter[<name>]=...`: an attribute that equals the value exactly, a to-one
 * relationship that points at any of the comma-separated ids (`null` for none, where allowed),
 * or a full-text search.
 */
export type FilterDescription =
  | { readonly kind: 'attribute'; readonly attribute: string; readonly description: string }
  | { readonly kind: 'relationship'; readonly relationship: string; readonly description: string }
  /**
   * Full-text search: the last word a prefix, the others whole words (src/model/search-words.ts),
   * case and accents folded, ranked by relevance. Every word must
   * match one of `fields`; the storage keeps an index of the attribute fields, checked at start.
   */
  | {
      readonly kind: 'search'
      readonly description: string
      readonly fields: readonly SearchField[]
      /** Default: one typo from 5 letters, two from 9 (DEFAULT_TYPO_RULE). */
      readonly typos?: TypoRule
    }

export interface ResourceDescription {
  /** Plural type name, used in responses and paths (`book_collections`). */
  readonly type: string
  /** Singular name, accepted as `data.type` in requests (`book_collection`). */
  readonly singular: string
  /** Human name for documentation (`Book collection`). */
  readonly title: string
  readonly table: string
  /** In field order: validation errors come out in this order. */
  readonly attributes: Readonly<Record<string, AttributeDescription>>
  readonly relationships: Readonly<Record<string, RelationshipDescription>>
  readonly filters: Readonly<Record<string, FilterDescription>>
  /** Filters the original interface takes as plain query parameters: `?author_id=1` is `filter[author]=1`. */
  readonly plainFilters: Readonly<Record<string, string>>
  /** Attributes a list can be sorted by (`id` always can). */
  readonly sortable: readonly string[]
  /** Relationships whose records a single-record GET puts in `included`. */
  readonly defaultInclude: readonly string[]
}

export function defineResource<const R extends ResourceDescription>(description: R): R {
  return description
}
