import type { Kind } from '../kinds'
import { href } from '../router'

/** A record's page or form whose record could not be read: gone (404), or the service's reason. */
export function UnreadRecord({ kind, status, message }: { kind: Kind; status: number; message: string }) {
  return (
    <section>
      <h1>{status === 404 ? `No such ${kind.one}` : `The ${kind.one} could not be read`}</h1>
      <p role="alert">
        {status === 404 ? `The catalogue has no ${kind.one} with this number: it may have been deleted.` : message}
      </p>
      <p>
        <a href={href(kind.path)}>All {kind.title.toLowerCase()}</a>
      </p>
    </section>
  )
}
