import { useEffect, useState } from 'preact/hooks'
import { accessKnown, canWrite } from '../access'
import { ApiError, api, type ListDocument, query, searchable } from '../api/client'
import type { Column, Kind } from '../kinds'
import type { Change } from '../live'
import { useLiveReload } from '../live-reload'
import { href, navigate, type Place } from '../router'
import { Row } from './list-row'
import { SelectAllHeader, SelectionBar, useSelection } from './selection-bar'

/** Rows a page: the API's default. */
const PAGE_SIZE = 20

/**
 * What a list shows, all of it from its URL: `q` the search, `sort` (`name`, `-name`), `after` or
 * `before` a cursor (the rows never skip or repeat while others write), or `page` for a search in
 * order of relevance (which moves as data changes, so it pages by number); `author` and
 * `collection` keep the books to one.
 */
interface ListState {
  readonly q: string
  readonly sort: string
  readonly after: string | undefined
  readonly before: string | undefined
  readonly page: number
  readonly author: string | undefined
  readonly collection: string | undefined
}

function stateOf(params: URLSearchParams): ListState {
  const page = Number(params.get('page') ?? '1')
  return {
    q: params.get('q') ?? '',
    sort: params.get('sort') ?? '',
    after: params.get('after') ?? undefined,
    before: params.get('before') ?? undefined,
    page: Number.isSafeInteger(page) && page > 0 ? page : 1,
    author: params.get('author') ?? undefined,
    collection: params.get('collection') ?? undefined,
  }
}

/** The list's URL in the app for `state`. */
function listHref(kind: Kind, state: ListState): string {
  return href(kind.path, {
    q: state.q,
    sort: state.sort,
    after: state.after,
    before: state.before,
    page: state.page > 1 ? String(state.page) : undefined,
    author: state.author,
    collection: state.collection,
  })
}

/** Ranked by relevance: a search with no sort chosen. */
const ranked = (state: ListState) => searchable(state.q) && state.sort === ''

/** The API request for the list's page. */
function apiPath(kind: Kind, state: ListState): string {
  const pages = ranked(state)
    ? { 'page[number]': state.page }
    : state.before !== undefined
      ? { 'page[before]': state.before }
      : { 'page[after]': state.after ?? '' }
  return `/${kind.type}${query({
    include: kind.include,
    'filter[search]': searchable(state.q) ? state.q : undefined,
    'filter[author]': state.author,
    'filter[book_collection]': state.collection,
    sort: state.sort || undefined,
    'page[size]': PAGE_SIZE,
    ...pages,
  })}`
}

/** The cursor of a link the API gave (links.next, links.prev), for the app's own URL. */
function cursorOf(link: string | undefined | null, name: 'page[after]' | 'page[before]'): string | undefined {
  if (!link) return undefined
  return new URL(link, window.location.origin).searchParams.get(name) ?? undefined
}

/** The last answer, for the API path it answered: while the URL asks for another, the table is busy. */
type Loaded =
  | { readonly kind: 'loading' }
  | { readonly kind: 'failed'; readonly path: string; readonly message: string }
  | { readonly kind: 'done'; readonly path: string; readonly document: ListDocument }

/**
 * Whether a change may alter what the list shows: a record of its type (created, renamed, deleted,
 * moved), or a record shown beside its rows (a book's author or collection, renamed).
 */
function touches(kind: Kind, document: ListDocument | undefined, change: Change): boolean {
  if (change.type === kind.type) return true
  return (document?.included ?? []).some((r) => r.type === change.type && r.id === change.id)
}

export function ListView({ kind, place }: { kind: Kind; place: Place }) {
  const state = stateOf(place.query)
  const path = apiPath(kind, state)
  const [loaded, setLoaded] = useState<Loaded>({ kind: 'loading' })
  const document = loaded.kind === 'done' ? loaded.document : undefined
  // Live: the same page read again (same search, sort and cursor) when the feed tells of a change
  // to it; the search box and the focus are left as they are.
  const live = useLiveReload((change) => touches(kind, document, change))
  // Read again after the app's own change (a bulk action), without waiting for the feed.
  const [refreshed, refresh] = useState(0)
  // Each change of the URL (a keystroke in the search box among them) asks for its page, and the
  // request before it is cancelled: only the latest answer is shown.
  useEffect(() => {
    const abort = new AbortController()
    // The rows shown stay until the new ones come (no flicker at each keystroke), marked busy.
    api<ListDocument>('GET', path, { signal: abort.signal })
      .then((answer) => setLoaded({ kind: 'done', path, document: answer.document }))
      .catch((error: unknown) => {
        if (abort.signal.aborted) return
        const message = error instanceof ApiError ? error.message : 'The service could not be reached'
        setLoaded({ kind: 'failed', path, message })
      })
    return () => abort.abort()
  }, [path, live, refreshed])

  const go = (next: Partial<ListState>, replace = false) =>
    navigate(listHref(kind, { ...state, after: undefined, before: undefined, page: 1, ...next }), { replace })
  const rows = document?.data ?? []
  // Rows are selected for the bulk actions: books, by a token that may write.
  const selection = useSelection(path, document?.data)
  const selectable = kind.type === 'books' && canWrite.value
  return (
    <section aria-labelledby="list-heading">
      <h1 id="list-heading">{kind.title}</h1>
      {canWrite.value ? (
        <p class="actions">
          <a class="button" href={href(`${kind.path}/new`)}>
            New {kind.one}
          </a>
        </p>
      ) : accessKnown.value ? null : (
        // Its place kept while the service is asked, so that the search box does not move as one types.
        <p class="actions pending" />
      )}
      <search>
        <label for="list-search">{kind.searchLabel}</label>
        <input
          id="list-search"
          type="search"
          value={state.q}
          autocomplete="off"
          spellcheck={false}
          onInput={(event) => go({ q: (event.target as HTMLInputElement).value }, true)}
        />
      </search>
      <Count kind={kind} document={document} q={state.q} />
      {loaded.kind === 'failed' ? (
        <div role="alert">
          <p>This page of the list could not be shown. The service said: {loaded.message}</p>
          {state.after !== undefined || state.before !== undefined || state.page > 1 || state.sort !== '' ? (
            <p>
              <a href={href(kind.path, { q: state.q, author: state.author, collection: state.collection })}>
                Go to the first page
              </a>
            </p>
          ) : null}
        </div>
      ) : null}
      <table aria-busy={loaded.kind === 'loading' || loaded.path !== path}>
        <thead>
          <tr>
            {selectable ? <SelectAllHeader selection={selection} rows={rows} /> : null}
            {kind.columns.map((column) => (
              <HeaderCell key={column.header} column={column} sort={state.sort} onSort={(sort) => go({ sort })} />
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((record) => (
            <Row
              key={record.id}
              kind={kind}
              record={record}
              included={document?.included ?? []}
              selection={
                selectable
                  ? { selected: selection.selected.has(record.id), toggle: () => selection.toggle(record.id) }
                  : undefined
              }
            />
          ))}
        </tbody>
      </table>
      {selectable ? <SelectionBar selection={selection} rows={rows} onDone={() => refresh((n) => n + 1)} /> : null}
      {document ? <Pager kind={kind} state={state} document={document} /> : null}
    </section>
  )
}

function Count({ kind, document, q }: { kind: Kind; document: ListDocument | undefined; q: string }) {
  const meta = document?.meta as { total?: number; totalIsLowerBound?: boolean } | undefined
  const total = meta?.total
  const text =
    total === undefined
      ? ''
      : total === 0 && searchable(q)
        ? `No ${kind.title.toLowerCase()} match “${q.trim()}”`
        : total === 0
          ? `No ${kind.title.toLowerCase()} yet`
          : `${total.toLocaleString('en')}${meta?.totalIsLowerBound ? '+' : ''} ${total === 1 ? kind.one : kind.title.toLowerCase()}`
  return (
    <p role="status" class="count">
      {text}
    </p>
  )
}

function HeaderCell({ column, sort, onSort }: { column: Column; sort: string; onSort: (sort: string) => void }) {
  if (!column.sort) return <th scope="col">{column.header}</th>
  const direction = sort === column.sort ? 'ascending' : sort === `-${column.sort}` ? 'descending' : 'none'
  const next = direction === 'ascending' ? `-${column.sort}` : column.sort
  return (
    <th scope="col" aria-sort={direction}>
      <button type="button" class="sort" onClick={() => onSort(next)}>
        {column.header}
        <span aria-hidden="true">{direction === 'ascending' ? ' ▲' : direction === 'descending' ? ' ▼' : ''}</span>
      </button>
    </th>
  )
}

function Pager({ kind, state, document }: { kind: Kind; state: ListState; document: ListDocument }) {
  const links = (document.links ?? {}) as { next?: string | null; prev?: string | null }
  let previous: string | undefined
  let next: string | undefined
  if (ranked(state)) {
    if (state.page > 1) previous = listHref(kind, { ...state, page: state.page - 1 })
    if (links.next) next = listHref(kind, { ...state, page: state.page + 1 })
  } else {
    const before = cursorOf(links.prev, 'page[before]')
    const after = cursorOf(links.next, 'page[after]')
    if (before !== undefined) previous = listHref(kind, { ...state, after: undefined, before })
    if (after !== undefined) next = listHref(kind, { ...state, before: undefined, after })
  }
  return (
    <nav aria-label="Pages" class="pager">
      {previous ? <a href={previous}>Previous page</a> : null}
      {next ? <a href={next}>Next page</a> : null}
    </nav>
  )
}
