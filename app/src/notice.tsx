import { signal } from '@preact/signals'
import { useEffect } from 'preact/hooks'

/**
 * What a finished write says on the page it leads to: `Saved` on the record's page, `Deleted …` on
 * the list. A write sets it, then goes to that page; it is shown there only, and forgotten once
 * the person goes elsewhere.
 *
 * The status region is the shell's, present on every page, so that screen readers announce the
 * message when it appears (a live region rendered with its text already in it may go unheard).
 */
interface Notice {
  /** The place (path under the app) it is shown on. */
  readonly path: string
  readonly text: string
}

const notice = signal<Notice | null>(null)

/** Says `text` on the page at `path`: call it just before going there. */
export function announce(path: string, text: string): void {
  notice.value = { path, text }
}

export function NoticeRegion({ path }: { path: string }) {
  const current = notice.value
  const shown = current?.path === path ? current.text : ''
  useEffect(() => {
    if (notice.peek() && notice.peek()?.path !== path) notice.value = null
  }, [path])
  return (
    <p role="status" class="notice">
      {shown}
    </p>
  )
}
