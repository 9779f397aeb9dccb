import type { Id } from '../store/store'

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
