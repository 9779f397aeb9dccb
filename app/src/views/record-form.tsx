import { useEffect, useRef, useState } from 'preact/hooks'
import { ApiError } from '../api/client'
import { Combobox } from '../combobox'
import type { Kind } from '../kinds'
import { subscribe } from '../live'
import { announce } from '../notice'
import { inAField } from '../page-heading'
import {
  createRecord,
  EMPTY,
  type FieldName,
  type Fields,
  fieldOf,
  readStored,
  type Stored,
  sameFields,
  updateRecord,
} from '../record-fields'
import { href, leave } from '../router'
import { type OtherVersion, OtherVersionAlert } from './other-version'
import { UnreadRecord } from './unread-record'

/** The API's refusals of a save: those about a field, shown by it, and the others. */
interface Refusal {
  readonly fields: Partial<Record<FieldName, string>>
  readonly general: readonly string[]
}

const NONE: Refusal = { fields: {}, general: [] }

function refusalOf(error: unknown): Refusal {
  if (!(error instanceof ApiError))
    return { fields: {}, general: ['The service could not be reached; nothing was saved'] }
  const fields: Partial<Record<FieldName, string>> = {}
  const general: string[] = []
  for (const e of error.errors) {
    const text = e.detail ?? e.title ?? ''
    const field = fieldOf(e)
    if (field) fields[field] = fields[field] ? `${fields[field]} ${text}` : text
    else general.push(text)
  }
  if (error.errors.length === 0) general.push(error.message)
  return { fields, general }
}

/** The id of each field's input, to focus the first one refused. */
const inputId = (field: FieldName) => `field-${field}`

type Loaded =
  | { readonly kind: 'loading' }
  | { readonly kind: 'failed'; readonly status: number; readonly message: string }
  | { readonly kind: 'ready' }

/**
 * New and Edit: a form at its own URL (/app/books/new, /app/books/12/edit). An edit keeps the ETag
 * it was opened with and sends it back in If-Match, so it never overwrites a colleague's change:
 * a refused save (412), or a change heard on the feed, shows their version beside what the person
 * typed. After a save, the record's page says `Saved`.
 */
export function RecordForm({ kind, id }: { kind: Kind; id?: string | undefined }) {
  const [loaded, setLoaded] = useState<Loaded>(id === undefined ? { kind: 'ready' } : { kind: 'loading' })
  /** The version the form was opened with (or last chose): its tag guards the save. */
  const [opened, setOpened] = useState<Stored | null>(null)
  const [fields, setFields] = useState<Fields>(EMPTY)
  const [refusal, setRefusal] = useState<Refusal>(NONE)
  const [other, setOther] = useState<OtherVersion | null>(null)
  const [saving, setSaving] = useState(false)
  // The feed's listener outlives renders: it reads the latest of these.
  const latest = useRef({ opened, saving: null as Fields | null })
  latest.current.opened = opened

  useEffect(() => {
    if (id === undefined) {
      document.getElementById(inputId('name'))?.focus()
      return
    }
    const abort = new AbortController()
    readStored(kind, id, abort.signal)
      .then((stored) => {
        setOpened(stored)
        setFields(stored.fields)
        setLoaded({ kind: 'ready' })
      })
      .catch((error: unknown) => {
        if (abort.signal.aborted) return
        setLoaded({
          kind: 'failed',
          status: error instanceof ApiError ? error.status : 0,
          message: error instanceof ApiError ? error.message : 'The service could not be reached',
        })
      })
    return () => abort.abort()
  }, [kind, id])

  useEffect(() => {
    if (loaded.kind !== 'ready' || id === undefined) return
    // Not from a field the person is already in: the record may come after they began (a slow
    // machine, a quick hand), and leaving a combobox settles it.
    if (inAField()) return
    document.getElementById(inputId('name'))?.focus()
  }, [loaded.kind, id])

  // Someone else's change to this record, heard on the feed while the form is open.
  useEffect(() => {
    if (id === undefined) return
    let gone = false
    const check = () => {
      readStored(kind, id)
        .then((current) => {
          const { opened: base, saving: ours } = latest.current
          if (gone || !base || sameFields(current.fields, base.fields)) return
          if (ours && sameFields(current.fields, ours)) return
          // A refused save's alert stays an alert, with the latest version in it.
          setOther((before) => ({ kind: 'changed', stored: current, refused: before?.refused ?? false }))
        })
        .catch((error: unknown) => {
          if (!gone && error instanceof ApiError && error.status === 404)
            setOther((before) => ({ kind: 'deleted', refused: before?.refused ?? false }))
        })
    }
    const unsubscribe = subscribe({
      change(change) {
        if (change.type !== kind.type || change.id !== id) return
        if (change.op === 'delete') setOther((before) => ({ kind: 'deleted', refused: before?.refused ?? false }))
        else check()
      },
      // The feed asks for it when its stream opens from now: a change made between the form's read
      // and the stream's start would go unheard (live.ts).
      reset: check,
    })
    return () => {
      gone = true
      unsubscribe()
    }
  }, [kind, id])

  const save = async (event: Event) => {
    event.preventDefault()
    if (saving) return
    setSaving(true)
    latest.current.saving = fields
    try {
      const savedId = id === undefined ? await createRecord(kind, fields) : id
      if (id !== undefined) await updateRecord(kind, id, fields, opened?.etag ?? null)
      announce(`${kind.path}/${savedId}`, 'Saved')
      leave(href(`${kind.path}/${savedId}`))
      return
    } catch (error) {
      latest.current.saving = null
      setSaving(false)
      if (error instanceof ApiError && id !== undefined && (error.status === 412 || error.status === 404)) {
        const theirs = await theirVersion(kind, id).catch(() => null)
        if (theirs) {
          setRefusal(NONE)
          setOther(theirs)
          return
        }
      }
      const refused = refusalOf(error)
      setRefusal(refused)
      const first = (['name', 'author', 'collection'] as const).find((f) => refused.fields[f])
      if (first) document.getElementById(inputId(first))?.focus()
    }
  }

  const cancel = () => leave(href(id === undefined ? kind.path : `${kind.path}/${id}`))
  const set = (change: Partial<Fields>) => setFields((before) => ({ ...before, ...change }))
  const heading = id === undefined ? `New ${kind.one}` : `Edit “${opened?.fields.name ?? ''}”`

  if (loaded.kind === 'loading') return <p aria-busy="true">Loading…</p>
  if (loaded.kind === 'failed') return <UnreadRecord kind={kind} status={loaded.status} message={loaded.message} />
  return (
    <section aria-labelledby="form-heading" class="record-form">
      <p class="crumbs">
        <a href={href(kind.path)}>{kind.title}</a>
      </p>
      <h1 id="form-heading">{heading}</h1>
      {other ? (
        <OtherVersionAlert
          kind={kind}
          other={other}
          onUseTheirs={() => {
            if (other.kind !== 'changed') return
            setOpened(other.stored)
            setFields(other.stored.fields)
            setRefusal(NONE)
            setOther(null)
          }}
          onKeepMine={() => {
            if (other.kind !== 'changed') return
            setOpened(other.stored)
            setOther(null)
          }}
        />
      ) : null}
      {refusal.general.length > 0 ? (
        <div role="alert" class="refusal">
          {refusal.general.map((text) => (
            <p key={text}>{text}</p>
          ))}
        </div>
      ) : null}
      <form onSubmit={save} noValidate aria-labelledby="form-heading">
        <div class="field">
          <label for={inputId('name')}>{kind.type === 'books' ? 'Title' : 'Name'}</label>
          <input
            id={inputId('name')}
            type="text"
            required
            autocomplete="off"
            value={fields.name}
            aria-invalid={refusal.fields.name ? 'true' : undefined}
            aria-describedby={refusal.fields.name ? `${inputId('name')}-error` : undefined}
            onInput={(event) => set({ name: (event.target as HTMLInputElement).value })}
          />
          {refusal.fields.name ? (
            <p id={`${inputId('name')}-error`} class="field-error">
              {refusal.fields.name}
            </p>
          ) : null}
        </div>
        {kind.type === 'books' ? (
          <>
            <Combobox
              id={inputId('author')}
              label="Author"
              type="authors"
              value={fields.author}
              onChange={(author) => set({ author })}
              error={refusal.fields.author}
            />
            <Combobox
              id={inputId('collection')}
              label="Collection"
              type="book_collections"
              value={fields.collection}
              onChange={(collection) => set({ collection })}
              error={refusal.fields.collection}
              clearable
            />
          </>
        ) : null}
        <div class="actions">
          <button type="submit" aria-disabled={saving ? 'true' : undefined}>
            Save
          </button>
          <button type="button" class="secondary" onClick={cancel}>
            Cancel
          </button>
        </div>
      </form>
    </section>
  )
}

/** The record as it is now, after a save was refused for it changed (412) or is gone (404). */
async function theirVersion(kind: Kind, id: string): Promise<OtherVersion> {
  try {
    return { kind: 'changed', stored: await readStored(kind, id), refused: true }
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return { kind: 'deleted', refused: true }
    throw error
  }
}
