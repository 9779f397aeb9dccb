import type { AnyRecord, Included } from '../api/client'
import { Highlighted } from '../highlight'
import { type Kind, kindOfType } from '../kinds'
import { href } from '../router'

function relatedOf(record: AnyRecord, name: string, included: readonly Included[]) {
  const relationship = (record.relationships as Record<string, { data?: { type: string; id: string } | null }>)[name]
  const linkage = relationship?.data
  if (!linkage) return undefined
  return included.find((r) => r.type === linkage.type && r.id === linkage.id)
}

/** A row's checkbox, where rows can be selected (the book list, to a token that may write). */
export interface RowSelection {
  readonly selected: boolean
  readonly toggle: () => void
}

/** One record of a list: its name linked to its page, then its columns; first its checkbox, if any. */
export function Row(props: {
  kind: Kind
  record: AnyRecord
  included: readonly Included[]
  selection?: RowSelection | undefined
}) {
  const { kind, record, included, selection } = props
  const matches = record.meta && 'matches' in record.meta ? record.meta.matches : undefined
  return (
    <tr class={selection?.selected ? 'selected' : undefined}>
      {selection ? (
        <td class="select">
          <input
            type="checkbox"
            checked={selection.selected}
            aria-label={`Select ${record.attributes.name ?? ''}`}
            onChange={selection.toggle}
          />
        </td>
      ) : null}
      {kind.columns.map((column) => {
        if (column.field === 'name') {
          return (
            <td key={column.header}>
              <a href={href(`${kind.path}/${record.id}`)}>
                <Highlighted text={record.attributes.name ?? ''} ranges={matches?.name} />
              </a>
            </td>
          )
        }
        if (column.field === 'books') {
          return (
            <td key={column.header}>
              <a
                href={href('books', { [kind.booksFilter ?? '']: record.id })}
                aria-label={`Books of ${record.attributes.name ?? ''}`}
              >
                Books
              </a>
            </td>
          )
        }
        const related = relatedOf(record, column.field, included)
        const relatedKind = related && kindOfType(related.type)
        return (
          <td key={column.header}>
            {related && relatedKind ? (
              <a href={href(`${relatedKind.path}/${related.id}`)}>
                <Highlighted text={related.attributes.name ?? ''} ranges={matches?.[`${column.field}.name`]} />
              </a>
            ) : null}
          </td>
        )
      })}
    </tr>
  )
}
