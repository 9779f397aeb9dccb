import type { Kind } from '../kinds'
import type { Fields, Stored } from '../record-fields'
import { href } from '../router'

/**
 * Someone else's version of the record an open form edits: found by a save the API refused (412,
 * If-Match no longer the record's tag) or heard on the change feed. It says so, shows the record
 * as it is now, and lets the person choose: load it into the form, or keep what they typed (and
 * save over it knowingly: the form then guards the write with the tag of the version they saw).
 * Until they choose, what they typed stays as it is.
 */
export type OtherVersion =
  | { readonly kind: 'changed'; readonly stored: Stored; readonly refused: boolean }
  | { readonly kind: 'deleted'; readonly refused: boolean }

interface Props {
  readonly kind: Kind
  readonly other: OtherVersion
  readonly onUseTheirs: () => void
  readonly onKeepMine: () => void
}

export function OtherVersionAlert({ kind, other, onUseTheirs, onKeepMine }: Props) {
  // A refused save is an alert: the person's action failed. A change heard while they type is
  // told politely, without interrupting them.
  const role = other.refused ? 'alert' : 'status'
  if (other.kind === 'deleted') {
    return (
      <div role={role} class="other-version">
        <p>
          {other.refused ? 'Not saved: this' : 'This'} {kind.one} was deleted by someone else since you opened it.
        </p>
        <p>
          <a href={href(kind.path)}>All {kind.title.toLowerCase()}</a>
        </p>
      </div>
    )
  }
  return (
    <div role={role} class="other-version">
      <p>
        {other.refused ? 'Not saved: this' : 'This'} {kind.one} was changed by someone else since you opened it.
        {other.refused ? ' Your changes are still in the form.' : ''} It is now:
      </p>
      <Values kind={kind} fields={other.stored.fields} />
      <div class="actions">
        <button type="button" onClick={onUseTheirs}>
          Use their version
        </button>
        <button type="button" class="secondary" onClick={onKeepMine}>
          Keep my changes
        </button>
      </div>
    </div>
  )
}

function Values({ kind, fields }: { kind: Kind; fields: Fields }) {
  return (
    <dl>
      <dt>{kind.type === 'books' ? 'Title' : 'Name'}</dt>
      <dd>{fields.name}</dd>
      {kind.type === 'books' ? (
        <>
          <dt>Author</dt>
          <dd>{fields.author?.name ?? 'None'}</dd>
          <dt>Collection</dt>
          <dd>{fields.collection?.name ?? 'None'}</dd>
        </>
      ) : null}
    </dl>
  )
}
