import { useRef, useState } from 'preact/hooks'
import { ApiError } from '../api/client'
import type { Kind } from '../kinds'
import { announce } from '../notice'
import { deleteRecord, readStored } from '../record-fields'
import { href, navigate } from '../router'

/** What a deletion costs, said before it is confirmed. */
function consequence(kind: Kind): string {
  if (kind.type === 'authors') return 'An author who still has books cannot be deleted.'
  if (kind.type === 'book_collections') return 'Its books are kept, in no collection.'
  return 'This cannot be undone.'
}

interface Props {
  readonly kind: Kind
  readonly id: string
  readonly name: string
  /** The ETag of the record as the page shows it: the delete is made only if it is still so. */
  readonly etag: string | null
}

/**
 * A record page's `Edit` and `Delete`. Delete asks first, in a modal dialog (the native <dialog>
 * with showModal: the page behind is inert, Escape closes it, focus goes in and comes back to the
 * button). The delete sends If-Match with the page's tag; a refusal is the API's own words (an
 * author who still has books: 409). If the record changed since the page was read (412), the
 * dialog shows it as it is now and asks again.
 */
export function RecordActions({ kind, id, name, etag }: Props) {
  const dialog = useRef<HTMLDialogElement>(null)
  const opener = useRef<HTMLButtonElement>(null)
  const cancel = useRef<HTMLButtonElement>(null)
  const [error, setError] = useState<string | null>(null)
  /** The record as it is now, once a delete found it changed: its name and tag. */
  const [current, setCurrent] = useState<{ name: string; etag: string | null } | null>(null)
  const [busy, setBusy] = useState(false)

  const open = () => {
    setError(null)
    setCurrent(null)
    dialog.current?.showModal()
    // The safe choice first: Enter or Space on it keeps the record.
    cancel.current?.focus()
  }

  const close = () => dialog.current?.close()

  const confirm = async () => {
    if (busy) return
    setBusy(true)
    setError(null)
    try {
      await deleteRecord(kind, id, current ? current.etag : etag)
      close()
      announce(kind.path, `Deleted “${current?.name ?? name}”`)
      navigate(href(kind.path))
    } catch (failure) {
      if (failure instanceof ApiError && failure.status === 412) {
        try {
          const stored = await readStored(kind, id)
          setCurrent({ name: stored.fields.name, etag: stored.etag })
        } catch {
          setError(failure.message)
        }
      } else if (failure instanceof ApiError && failure.status === 404) {
        close()
        announce(kind.path, `“${name}” was already deleted`)
        navigate(href(kind.path))
      } else {
        setError(
          failure instanceof ApiError ? failure.message : 'The service could not be reached; nothing was deleted',
        )
      }
    } finally {
      setBusy(false)
    }
  }

  const headingId = 'delete-heading'
  return (
    <div class="actions">
      <a class="button" href={href(`${kind.path}/${id}/edit`)}>
        Edit
      </a>
      <button type="button" class="danger" ref={opener} onClick={open}>
        Delete
      </button>
      <dialog
        ref={dialog}
        class="confirm"
        aria-labelledby={headingId}
        aria-describedby="delete-consequence"
        onClose={() => opener.current?.focus()}
      >
        <h2 id={headingId}>Delete “{current?.name ?? name}”?</h2>
        <p id="delete-consequence">{consequence(kind)}</p>
        {current ? (
          <p role="alert">
            This {kind.one} was changed by someone else since you opened it: it is now “{current.name}”. Delete it
            anyway?
          </p>
        ) : null}
        {error ? <p role="alert">{error}</p> : null}
        <div class="actions">
          <button type="button" class="danger" onClick={confirm} aria-disabled={busy ? 'true' : undefined}>
            Delete
          </button>
          <button type="button" class="secondary" ref={cancel} onClick={close}>
            Cancel
          </button>
        </div>
      </dialog>
    </div>
  )
}
