import { following, live } from '../live'

/**
 * Whether the page follows the change feed now, in words (the dot beside them is only a cue):
 * `Live` while the stream is open, `Not live` while it is being opened again; nothing where the
 * view follows nothing (a new record's form).
 */
export function LiveIndicator() {
  if (!following.value) return null
  const on = live.value
  return (
    <p class={on ? 'live on' : 'live'}>
      <span aria-hidden="true" class="dot" />
      {on ? 'Live' : 'Not live'}
    </p>
  )
}
