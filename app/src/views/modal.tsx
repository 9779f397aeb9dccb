import type { ComponentChildren } from 'preact'
import { useEffect, useRef } from 'preact/hooks'

/**
 * A modal dialog: the browser's own <dialog> opened with showModal(), so that the page behind it
 * is inert, Escape closes it, focus stays inside and returns where it was. Shown while mounted;
 * `onClose` hears it closed by Escape or by `close()` (its Cancel buttons call that).
 */
export function Modal(props: { labelledBy: string; onClose: () => void; children: ComponentChildren }) {
  const dialog = useRef<HTMLDialogElement>(null)
  useEffect(() => {
    const element = dialog.current
    element?.showModal()
    return () => element?.close()
  }, [])
  return (
    <dialog ref={dialog} class="confirm modal" aria-labelledby={props.labelledBy} onClose={props.onClose}>
      {props.children}
    </dialog>
  )
}

/** Closes the dialog `element` is in (its Cancel button's click). */
export function closeDialogOf(element: EventTarget | null): void {
  ;(element as Element | null)?.closest('dialog')?.close()
}
