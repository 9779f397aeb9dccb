import type { ComponentChildren } from 'preact'
import type { Matches } from './api/client'

/**
 * A field's text with the words a search matched marked (`meta.matches` of the record: ranges in
 * UTF-16 code units, as JavaScript counts); a word found only by forgiving a typo is marked too,
 * and said so in its title.
 */
export function Highlighted({ text, ranges }: { text: string; ranges?: Matches[string] | undefined }) {
  if (!ranges || ranges.length === 0) return <>{text}</>
  const parts: ComponentChildren[] = []
  let at = 0
  for (const range of [...ranges].sort((a, b) => a.start - b.start)) {
    if (range.start < at || range.end > text.length) continue
    if (range.start > at) parts.push(text.slice(at, range.start))
    const word = text.slice(range.start, range.end)
    parts.push(
      range.forgiven ? (
        <mark class="forgiven" title="Matched with a typo forgiven">
          {word}
        </mark>
      ) : (
        <mark>{word}</mark>
      ),
    )
    at = range.end
  }
  if (at < text.length) parts.push(text.slice(at))
  return <>{parts}</>
}
