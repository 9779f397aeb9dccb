import { useEffect, useRef, useState } from 'preact/hooks'
import { type AnyRecord, ApiError } from '../api/client'
import { deleteBooks, moveBooks } from '../api/operations'
import { booksCount, DeleteDialog, MoveDialog, type Picked } from './bulk-dialogs'

/*
 * Many books at once: rows of the book list selected by their checkboxes (or all of the page's),
 * then moved to a collection or deleted, each in one atomic request, all or nothing.
 */

export interface Selection {
  readonly selected: ReadonlySet<string>
  readonly toggle: (id: string) => void
  readonly setAll: (on: boolean) => void
  readonly clear: () => void
}

/** The rows selected of `rows`, the page `path` shows. */
export function useSelection(path: string, rows: readonly AnyRecord[] | undefined): Selection {
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set())
  // Another search, sort or page starts with nothing selected: only rows in sight are acted on.
  useEffect(() => setSelected(new Set()), [path])
  // Rows gone from the page as it is read again (deleted by anyone, say) leave the selection.
  useEffect(() => {
    if (!rows) return
    const shown = new Set(rows.map((row) => row.id))
    setSelected((before) => {
      const kept = [...before].filter((id) => shown.has(id))
      return kept.length === before.size ? before : new Set(kept)
    })
  }, [rows])
  return {
    selected,
    toggle: (id) =>
      setSelected((before) => {
        const next = new Set(before)
        if (!next.delete(id)) next.add(id)
        return next
      }),
    setAll: (on) => setSelected(on ? new Set((rows ?? []).map((row) => row.id)) : new Set()),
    clear: () => setSelected(new Set()),
  }
}

/** The header cell over the checkboxes: selects every row of the page, or none. */
export function SelectAllHeader({ selection, rows }: { selection: Selection; rows: readonly AnyRecord[] }) {
  const count = rows.filter((row) => selection.selected.has(row.id)).length
  return (
    <th scope="col" class="select">
      <input
        type="checkbox"
        aria-label="Select all books on this page"
        checked={rows.length > 0 && count === rows.length}
        indeterminate={count > 0 && count < rows.length}
        disabled={rows.length === 0}
        onChange={() => selection.setAll(count < rows.length)}
      />
    </th>
  )
}

type Dialog = { readonly kind: 'move' | 'delete'; readonly books: Picked[] }
type Outcome = { readonly done: boolean; readonly message: string }

/** The index of the operation a refusal of an atomic request points at, if it names one. */
function operationOf(error: ApiError): number | undefined {
  for (const e of error.errors) {
    // In source.pointer (`/atomic:operations/1/...`), or in meta.operation for a header's refusal (412, 428).
    const where = e.source?.pointer ?? (e.meta as { operation?: unknown } | undefined)?.operation
    const at = typeof where === 'string' ? /^\/atomic:operations\/(\d+)/.exec(where) : null
    if (at) return Number(at[1])
  }
  return undefined
}

/**
 * Below the list, in sight while it scrolls: what the last action did (a status, or the API's
 * refusal in an alert), and with rows selected, `Move to collection` and `Delete selected`.
 * `onDone` reads the list again after a change.
 */
export function SelectionBar(props: { selection: Selection; rows: readonly AnyRecord[]; onDone: () => void }) {
  const { selection, rows } = props
  const [dialog, setDialog] = useState<Dialog | null>(null)
  const [busy, setBusy] = useState(false)
  const [outcome, setOutcome] = useState<Outcome | null>(null)
  const status = useRef<HTMLParagraphElement>(null)
  // What the dialog acts on is fixed as it opens: the rows the user saw selected.
  const picked = rows
    .filter((row) => selection.selected.has(row.id))
    .map((row) => ({ id: row.id, name: row.attributes.name ?? '' }))

  /**
   * Runs one atomic request over `books`, in their order. A refusal names the operation that
   * failed by its index (`/atomic:operations/1`): the book it was about is named beside the API's
   * own detail, which a person could not map back.
   */
  const run = async (books: readonly Picked[], action: () => Promise<void>, done: string, refused: string) => {
    setBusy(true)
    setOutcome(null)
    try {
      await action()
      setOutcome({ done: true, message: done })
      selection.clear()
      props.onDone()
      // The buttons go with the selection: focus goes to what was done, not to the page's top.
      requestAnimationFrame(() => status.current?.focus())
    } catch (error) {
      const reason = error instanceof ApiError ? error.message : 'the service could not be reached'
      const index = error instanceof ApiError ? operationOf(error) : undefined
      const book = index === undefined ? undefined : books[index]
      setOutcome({ done: false, message: `${refused}. ${book ? `${book.name}: ` : ''}${reason}` })
    } finally {
      setBusy(false)
      setDialog(null)
    }
  }
  const move = (books: Picked[], collection: Picked | null) =>
    run(
      books,
      () =>
        moveBooks(
          books.map((b) => b.id),
          collection?.id ?? null,
        ),
      `Moved ${booksCount(books.length)} ${collection ? `to ${collection.name}` : 'out of their collections'}`,
      'Nothing was moved',
    )
  const remove = (books: Picked[]) =>
    run(books, () => deleteBooks(books.map((b) => b.id)), `Deleted ${booksCount(books.length)}`, 'Nothing was deleted')

  return (
    <div class="selection-bar">
      <p role="status" class="bulk-status" ref={status} tabIndex={-1}>
        {outcome?.done ? outcome.message : ''}
      </p>
      {outcome && !outcome.done ? <p role="alert">{outcome.message}</p> : null}
      {picked.length > 0 ? (
        <fieldset class="bulk-actions">
          <legend>{booksCount(picked.length)} selected</legend>
          <button type="button" class="secondary" onClick={() => setDialog({ kind: 'move', books: picked })}>
            Move to collection
          </button>
          <button type="button" class="danger" onClick={() => setDialog({ kind: 'delete', books: picked })}>
            Delete selected
          </button>
        </fieldset>
      ) : null}
      {dialog?.kind === 'move' ? (
        <MoveDialog
          count={dialog.books.length}
          busy={busy}
          onMove={(collection) => move(dialog.books, collection)}
          onClose={() => setDialog(null)}
        />
      ) : null}
      {dialog?.kind === 'delete' ? (
        <DeleteDialog
          books={dialog.books}
          busy={busy}
          onDelete={() => remove(dialog.books)}
          onClose={() => setDialog(null)}
        />
      ) : null}
    </div>
  )
}
