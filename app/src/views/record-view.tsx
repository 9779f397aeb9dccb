import { useEffect, useRef, useState } from 'preact/hooks'
import { canWrite } from '../access'
import { type AnyRecord, ApiError, api, type Included, query } from '../api/client'
import { KINDS, type Kind, kindOfType } from '../kinds'
import type { Change } from '../live'
import { useLiveReload } from '../live-reload'
import { href } from '../router'
import { RecordActions } from './delete-dialog'
import { UnreadRecord } from './unread-record'

interface RecordDocument {
  readonly data: AnyRecord
  readonly included?: Included[]
}

interface BooksDocument {
  readonly data: AnyRecord[]
  readonly meta?: { total?: number }
}

type Loaded =
  | { readonly kind: 'loading' }
  | { readonly kind: 'failed'; readonly status: number; readonly message: string }
  | {
      readonly kind: 'done'
      readonly record: RecordDocument
      readonly books?: BooksDocument
      /** The record's ETag: a delete from this page is made only if the record is still as shown. */
      readonly etag?: string | null
    }

/** Books shown on an author's or a collection's page; the rest are a link away, in the paged list. */
const BOOKS_SHOWN = 20

/**
 * Whether a change may alter a record's page: the record itself, a record shown on it (a book's
 * author or collection), or, on an author's or a collection's page, any book (one may have joined).
 */
function touches(kind: Kind, id: string, loaded: Loaded, change: Change): boolean {
  if (change.type === kind.type && change.id === id) return true
  if (kind.type !== 'books' && change.type === 'books') return true
  if (loaded.kind !== 'done') return false
  return (loaded.record.included ?? []).some((r) => r.type === change.type && r.id === change.id)
}

/** A record's page: its name as the heading, its fields, and links to its related records. */
export function RecordView({ kind, id }: { kind: Kind; id: string }) {
  const [loaded, setLoaded] = useState<Loaded>({ kind: 'loading' })
  // Live: read again when the feed tells of a change to what the page shows; the record's own
  // deletion is said (the page keeps what it was), and not read again.
  const [deleted, setDeleted] = useState(false)
  const version = useLiveReload((change) => {
    if (change.type === kind.type && change.id === id && change.op === 'delete') {
      setDeleted(true)
      return false
    }
    return touches(kind, id, loaded, change)
  })
  // The record on the page: reading it again keeps it in sight; another record starts with Loading.
  const shown = useRef('')
  const key = `${kind.type}/${id}`
  useEffect(() => setDeleted(false), [key])
  useEffect(() => {
    const abort = new AbortController()
    if (shown.current !== key) setLoaded({ kind: 'loading' })
    const include = kind.type === 'books' ? query({ include: 'author,book_collection' }) : query({ include: '' })
    const record = api<RecordDocument>('GET', `/${kind.type}/${id}${include}`, { signal: abort.signal })
    const books =
      kind.type === 'books'
        ? Promise.resolve(undefined)
        : api<BooksDocument>('GET', `/${kind.type}/${id}/books${query({ 'page[size]': BOOKS_SHOWN, sort: 'name' })}`, {
            signal: abort.signal,
          })
    Promise.all([record, books])
      .then(([r, b]) => {
        shown.current = key
        setLoaded({ kind: 'done', record: r.document, etag: r.etag, ...(b ? { books: b.document } : {}) })
      })
      .catch((error: unknown) => {
        if (abort.signal.aborted) return
        const status = error instanceof ApiError ? error.status : 0
        // Gone while on the page (its deletion read before the feed told of it): said as deleted.
        if (status === 404 && shown.current === key) {
          setDeleted(true)
          return
        }
        const message = error instanceof ApiError ? error.message : 'The service could not be reached'
        shown.current = ''
        setLoaded({ kind: 'failed', status, message })
      })
    return () => abort.abort()
  }, [kind, id, version])

  if (loaded.kind === 'loading') return <p aria-busy="true">Loading…</p>
  if (loaded.kind === 'failed') return <UnreadRecord kind={kind} status={loaded.status} message={loaded.message} />
  const record = loaded.record.data
  const name = record.attributes.name ?? ''
  return (
    <article aria-labelledby="record-heading">
      <p class="crumbs">
        <a href={href(kind.path)}>{kind.title}</a>
      </p>
      <h1 id="record-heading">{name}</h1>
      {deleted ? (
        <p role="alert">
          This {kind.one} has been deleted: the page shows it as it was.{' '}
          <a href={href(kind.path)}>All {kind.title.toLowerCase()}</a>
        </p>
      ) : canWrite.value ? (
        <RecordActions kind={kind} id={record.id} name={name} etag={loaded.etag ?? null} />
      ) : null}
      <dl>
        <dt>{kind.type === 'books' ? 'Title' : 'Name'}</dt>
        <dd>{name}</dd>
        {kind.type === 'books' ? (
          <>
            <Related record={record} name="author" label="Author" included={loaded.record.included ?? []} />
            <Related
              record={record}
              name="book_collection"
              label="Collection"
              included={loaded.record.included ?? []}
            />
          </>
        ) : null}
      </dl>
      {loaded.books ? <Books kind={kind} id={record.id} name={name} books={loaded.books} /> : null}
    </article>
  )
}

function Related(props: { record: AnyRecord; name: string; label: string; included: readonly Included[] }) {
  const linkage = (props.record.relationships as Record<string, { data?: { type: string; id: string } | null }>)[
    props.name
  ]?.data
  const related = linkage && props.included.find((r) => r.type === linkage.type && r.id === linkage.id)
  const relatedKind = related && kindOfType(related.type)
  return (
    <>
      <dt>{props.label}</dt>
      <dd>
        {related && relatedKind ? (
          <a href={href(`${relatedKind.path}/${related.id}`)}>{related.attributes.name}</a>
        ) : (
          'None'
        )}
      </dd>
    </>
  )
}

function Books({ kind, id, name, books }: { kind: Kind; id: string; name: string; books: BooksDocument }) {
  const total = books.meta?.total ?? books.data.length
  const booksKind = KINDS[0] as Kind
  return (
    <section aria-labelledby="books-heading">
      <h2 id="books-heading">Books</h2>
      {books.data.length === 0 ? <p>No books.</p> : null}
      <ul>
        {books.data.map((book) => (
          <li key={book.id}>
            <a href={href(`${booksKind.path}/${book.id}`)}>{book.attributes.name}</a>
          </li>
        ))}
      </ul>
      {total > books.data.length ? (
        <p>
          <a href={href(booksKind.path, { [kind.booksFilter ?? '']: id, sort: 'name' })}>
            All {total.toLocaleString('en')} books of {name}
          </a>
        </p>
      ) : null}
    </section>
  )
}
