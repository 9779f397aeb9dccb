import type { Id } from '../model/record'
import { recordNotFound } from './errors'

const canonicalId = /^[1-9][0-9]{0,15}$/

/**
 * A record id from a URL or a document: a positive integer, as a number or in canonical decimal
 * form. Anything else (a word, `-1`, `1.5`, `01`, a number beyond 2^53) is null: no record has it.
 */
export function parseId(value: unknown): Id | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value > 0 ? value : null
  if (typeof value !== 'string' || !canonicalId.test(value)) return null
  const id = Number(value)
  return Number.isSafeInteger(id) ? id : null
}

/** The id in a URL; an id no record can have is a 404 like any unknown one. */
export function requireId(id: string | undefined): Id {
  const parsed = parseId(id)
  if (parsed === null) throw recordNotFound()
  return parsed
}
