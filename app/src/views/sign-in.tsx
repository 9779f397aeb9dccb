import { useEffect, useRef, useState } from 'preact/hooks'
import { readBlocked, scope, signIn, signInError, signInShown, signOut, tokensInUse } from '../access'
import { token } from '../api/client'

/**
 * The form that asks for an API token, where the service has them: on its own when nothing can be
 * read without one (`blocking`), above the page when only writes need one. The token is tried
 * before it is kept (for the tab alone); a refusal shows the API's own reason at the field.
 */
export function SignIn({ blocking }: { blocking: boolean }) {
  const [value, setValue] = useState('')
  const [error, setError] = useState<string | null>(signInError.value)
  const [busy, setBusy] = useState(false)
  const field = useRef<HTMLInputElement>(null)
  useEffect(() => field.current?.focus(), [])

  const submit = async (event: Event) => {
    event.preventDefault()
    const given = value.trim()
    if (given === '') {
      setError('Enter an API token')
      field.current?.focus()
      return
    }
    setBusy(true)
    const refused = await signIn(given)
    if (refused === null) {
      // The form is gone: the page's content is where one goes on.
      requestAnimationFrame(() => document.getElementById('main')?.focus())
      return
    }
    setBusy(false)
    setError(refused)
    field.current?.focus()
  }

  const Heading = blocking ? 'h1' : 'h2'
  return (
    <section class="sign-in" aria-labelledby="sign-in-heading">
      <Heading id="sign-in-heading">Sign in</Heading>
      <p id="sign-in-about">
        {blocking ? 'This catalogue needs an API token to be read.' : 'Changing the catalogue needs an API token.'} It
        is kept in this tab only, until you sign out or close it.
      </p>
      <form onSubmit={submit} aria-busy={busy}>
        <label for="sign-in-token">API token</label>
        <input
          id="sign-in-token"
          ref={field}
          type="password"
          autocomplete="off"
          spellcheck={false}
          value={value}
          aria-invalid={error ? 'true' : undefined}
          aria-describedby={error ? 'sign-in-error sign-in-about' : 'sign-in-about'}
          onInput={(event) => setValue((event.target as HTMLInputElement).value)}
        />
        {error ? (
          <p id="sign-in-error" class="field-error" role="alert">
            {error}
          </p>
        ) : null}
        <div class="actions">
          <button type="submit" disabled={busy}>
            Sign in
          </button>
          {blocking ? null : (
            <button type="button" class="secondary" onClick={() => (signInShown.value = false)}>
              Cancel
            </button>
          )}
        </div>
      </form>
    </section>
  )
}

/** The header's part: whether the tab is signed in and what its token may do; Sign in, Sign out. */
export function SessionControls() {
  if (!tokensInUse.value) return null
  if (token.value !== null) {
    const what = scope.value === 'write' ? 'may edit' : scope.value === 'read' ? 'read only' : 'checking…'
    return (
      <div class="session">
        <span>Signed in ({what})</span>
        <button type="button" class="secondary" onClick={signOut}>
          Sign out
        </button>
      </div>
    )
  }
  if (readBlocked.value || signInShown.value) return null
  return (
    <div class="session">
      <button type="button" class="secondary" onClick={() => (signInShown.value = true)}>
        Sign in
      </button>
    </div>
  )
}
