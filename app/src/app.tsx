import { Fragment } from 'preact'
import { readBlocked, scope, signInShown, signOuts } from './access'
import { token } from './api/client'
import { KINDS, type Kind, kindOfPath } from './kinds'
import { NoticeRegion } from './notice'
import { href, place } from './router'
import { ListView } from './views/list-view'
import { LiveIndicator } from './views/live-indicator'
import { RecordForm } from './views/record-form'
import { RecordView } from './views/record-view'
import { SessionControls, SignIn } from './views/sign-in'

const ID = /^[1-9][0-9]*$/

/**
 * The page: a link past the navigation, the navigation, whether it is live, who is signed in, and
 * the view the URL names (or the sign-in form, where nothing can be read without a token).
 */
export function App() {
  const current = place.value
  const [first = '', second, third, ...rest] = current.path.split('/')
  const kind = kindOfPath(first) ?? (first === '' ? KINDS[0] : undefined)
  let view = <NotFound />
  if (kind && second === undefined) view = <ListView kind={kind} place={current} />
  else if (kind && second === 'new' && third === undefined) view = <Writing kind={kind} form={current.path} />
  else if (kind && second !== undefined && ID.test(second) && rest.length === 0) {
    if (third === undefined) view = <RecordView kind={kind} id={second} />
    else if (third === 'edit') view = <Writing kind={kind} form={current.path} id={second} />
  }
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header>
        <a class="brand" href={href('')}>
          Library catalogue
        </a>
        <nav aria-label="Catalogue">
          <ul>
            {KINDS.map((k) => (
              <li key={k.type}>
                <a href={href(k.path)} aria-current={k === kind ? 'page' : undefined}>
                  {k.title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="header-end">
          {readBlocked.value ? null : <LiveIndicator />}
          <SessionControls />
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {readBlocked.value ? <SignIn blocking={true} /> : null}
        {!readBlocked.value && signInShown.value ? <SignIn blocking={false} /> : null}
        <NoticeRegion path={current.path} />
        {/* After a sign-out the views start afresh: nothing read with the token stays on the page. */}
        {readBlocked.value ? null : <Fragment key={signOuts.value}>{view}</Fragment>}
      </main>
    </>
  )
}

/**
 * A form that writes; where the tab's token may only read (the form's URL opened anyway), a page
 * that says so. Without a token the form is shown: its save answers why it cannot (401).
 */
function Writing({ kind, form, id }: { kind: Kind; form: string; id?: string }) {
  if (token.value === null || scope.value !== 'read') return <RecordForm key={form} kind={kind} id={id} />
  return (
    <section>
      <h1>{id === undefined ? `New ${kind.one}` : `Edit this ${kind.one}`}</h1>
      <p role="alert">This API token may only read: sign in with one that may write to change the catalogue.</p>
      <p>
        <a href={href(id === undefined ? kind.path : `${kind.path}/${id}`)}>
          {id === undefined ? `Back to the ${kind.title.toLowerCase()}` : `Back to the ${kind.one}`}
        </a>
      </p>
    </section>
  )
}

function NotFound() {
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        <a href={href('books')}>Go to the books</a>
      </p>
    </section>
  )
}
