import { place } from './router'

/**
 * What a person using a screen reader, the tabs or the history menu needs of a view that changed
 * without a page load: the document's title names the view (its level-1 heading, WCAG 2.4.2), and
 * after a move to another view (another path; not a new search, sort or page of the same list) the
 * focus goes to that heading, so that the new view is announced and Tab starts from it. Watched
 * from outside the views: each keeps its heading, whenever its data comes.
 */

const APP_NAME = 'Library catalogue'
/** How long a moved focus waits for the new view's heading (its record still loading). */
const HEADING_WAIT_MS = 3000

/** Whether the person is in a field of `within`: a view's own focus (its heading, its first field) leaves them there. */
export function inAField(within: ParentNode = document): boolean {
  const active = document.activeElement
  return active !== null && within.contains(active) && active.matches('input, select, textarea')
}

export function followHeadings(main: HTMLElement): void {
  let focusDue = 0
  const update = () => {
    const heading = main.querySelector('h1')
    const text = heading?.textContent?.trim() ?? ''
    const title = text === '' || text === APP_NAME ? APP_NAME : `${text} · ${APP_NAME}`
    if (document.title !== title) document.title = title
    if (heading && focusDue > performance.now()) {
      focusDue = 0
      if (inAField(main)) return
      if (!heading.hasAttribute('tabindex')) heading.setAttribute('tabindex', '-1')
      heading.focus()
    }
  }
  new MutationObserver(update).observe(main, { childList: true, subtree: true, characterData: true })
  update()
  let path = place.value.path
  place.subscribe((now) => {
    if (now.path === path) return
    path = now.path
    // Unless the person is already in the new view (a form's first field, say), its heading takes the focus.
    focusDue = performance.now() + HEADING_WAIT_MS
    queueMicrotask(update)
  })
}
