import { live } from '../live'

/**
 * Whether the page follows the change feed now, in words (the dot beside them is only a cue):
 * `Live` while the stream is open, `Not live` while it is being opened again.
 */
export function LiveIndicator() {
  const on = live.value
  return (
    <p class={on ? 'live on' : 'live'}>
      <span aria-hidden="true" class="dot" />
      {on ? 'Live' : 'Not live'}
    </p>
  )
}
