import { useEffect, useState } from 'preact/hooks'
import { ApiError, api, type Collection, type CollectionList, query, searchable } from '../api/client'
import { closeDialogOf, Modal } from './modal'

/** A record the user picked, by id and by the name they saw. */
export interface Picked {
  readonly id: string
  readonly name: string
}

/** `3 books`, `1 book`. */
export function booksCount(n: number): string {
  return `${n.toLocaleString('en')} ${n === 1 ? 'book' : 'books'}`
}

/** Collections offered at once; more are a search away. */
const COLLECTIONS_SHOWN = 50

/** The collections whose names match `q` (all, by name, without one), as one types. */
function useCollections(q: string): { found: readonly Collection[] | undefined; failed: string | null } {
  const [found, setFound] = useState<readonly Collection[] | undefined>(undefined)
  const [failed, setFailed] = useState<string | null>(null)
  useEffect(() => {
    const abort = new AbortController()
    const search = searchable(q) ? q : undefined
    api<CollectionList>(
      'GET',
      `/book_collections${query({ 'filter[search]': search, sort: 'name', 'page[size]': COLLECTIONS_SHOWN })}`,
      { signal: abort.signal },
    )
      .then((answer) => {
        setFound(answer.document.data)
        setFailed(null)
      })
      .catch((error: unknown) => {
        if (!abort.signal.aborted)
          setFailed(error instanceof ApiError ? error.message : 'Collections could not be read')
      })
    return () => abort.abort()
  }, [q])
  return { found, failed }
}

/**
 * Where to move the selected books: a collection chosen from a list that a search box narrows
 * (the service's search, as one types), or `No collection`.
 */
export function MoveDialog(props: {
  count: number
  busy: boolean
  onMove: (collection: Picked | null) => void
  onClose: () => void
}) {
  const [q, setQ] = useState('')
  // undefined: nothing chosen yet; null: No collection.
  const [chosen, setChosen] = useState<Picked | null | undefined>(undefined)
  const [unchosen, setUnchosen] = useState(false)
  const { found, failed } = useCollections(q)
  const shown = found ?? []
  const value = chosen === undefined ? '' : chosen === null ? 'none' : chosen.id
  // A search that narrows the list to one collection chooses it (Enter in the search box then moves).
  const only = searchable(q) && shown.length === 1 ? shown[0] : undefined
  useEffect(() => {
    if (only && chosen === undefined) setChosen({ id: only.id, name: only.attributes.name ?? '' })
  }, [only, chosen])

  const choose = (id: string) => {
    setUnchosen(false)
    if (id === '') setChosen(undefined)
    else if (id === 'none') setChosen(null)
    else if (chosen?.id !== id) {
      const collection = shown.find((c) => c.id === id)
      setChosen(collection ? { id, name: collection.attributes.name ?? '' } : undefined)
    }
  }
  const submit = (event: Event) => {
    event.preventDefault()
    if (chosen === undefined) setUnchosen(true)
    else props.onMove(chosen)
  }
  return (
    <Modal labelledBy="bulk-move-heading" onClose={props.onClose}>
      <form onSubmit={submit}>
        <h2 id="bulk-move-heading">Move {booksCount(props.count)} to a collection</h2>
        <div class="field">
          <label for="move-find">Find a collection</label>
          <input
            id="move-find"
            type="search"
            autocomplete="off"
            value={q}
            onInput={(event) => setQ((event.target as HTMLInputElement).value)}
          />
        </div>
        <div class="field">
          <label for="move-collection">Collection</label>
          <select
            id="move-collection"
            value={value}
            aria-invalid={unchosen ? 'true' : undefined}
            aria-describedby={unchosen ? 'move-unchosen' : 'move-found'}
            onChange={(event) => choose((event.target as HTMLSelectElement).value)}
          >
            <option value="">Choose a collection</option>
            <option value="none">No collection</option>
            {chosen && !shown.some((c) => c.id === chosen.id) ? <option value={chosen.id}>{chosen.name}</option> : null}
            {shown.map((c) => (
              <option key={c.id} value={c.id}>
                {c.attributes.name}
              </option>
            ))}
          </select>
          {unchosen ? (
            <p id="move-unchosen" class="field-error">
              Choose a collection, or No collection
            </p>
          ) : null}
          <p id="move-found" class="hint">
            {failed ?? (found === undefined ? 'Reading collections…' : foundText(found.length, q))}
          </p>
        </div>
        <div class="actions">
          <button type="submit" disabled={props.busy}>
            Move
          </button>
          <button type="button" class="secondary" onClick={(event) => closeDialogOf(event.currentTarget)}>
            Cancel
          </button>
        </div>
      </form>
    </Modal>
  )
}

function foundText(n: number, q: string): string {
  if (q.trim() === '') return n < COLLECTIONS_SHOWN ? '' : `The first ${n} collections by name: search for others`
  if (n === 0) return `No collection matches “${q.trim()}”`
  return `${n}${n === COLLECTIONS_SHOWN ? '+' : ''} ${n === 1 ? 'collection matches' : 'collections match'}`
}

/** Asks before deleting the selected books, naming each. */
export function DeleteDialog(props: {
  books: readonly Picked[]
  busy: boolean
  onDelete: () => void
  onClose: () => void
}) {
  return (
    <Modal labelledBy="bulk-delete-heading" onClose={props.onClose}>
      <h2 id="bulk-delete-heading">Delete {booksCount(props.books.length)}?</h2>
      <ul class="picked">
        {props.books.map((book) => (
          <li key={book.id}>{book.name}</li>
        ))}
      </ul>
      <p>Deleted books cannot be brought back.</p>
      <div class="actions">
        <button type="button" class="danger" disabled={props.busy} onClick={props.onDelete}>
          Delete
        </button>
        <button type="button" class="secondary" autofocus onClick={(event) => closeDialogOf(event.currentTarget)}>
          Cancel
        </button>
      </div>
    </Modal>
  )
}
