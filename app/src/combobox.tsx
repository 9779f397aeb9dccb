import { useEffect, useRef, useState } from 'preact/hooks'
import { api, type Matches, query, searchable } from './api/client'
import { Highlighted } from './highlight'
import type { Choice } from './record-fields'

/**
 * A field that picks a related record by searching as one types: the ARIA combobox pattern (an
 * input with role=combobox, a listbox of options, the active one named by aria-activedescendant;
 * Down and Up move, Enter picks (the active option, or the only one), Escape closes, then puts back the chosen name). Each keystroke
 * asks the API (`filter[search]`, the request before cancelled). Focus stays in the input.
 *
 * The value changes only when an option is picked, when the text is emptied (no record: for a
 * collection, none; for an author, the API will say one is needed), or when the text left is
 * exactly an option's name; any other text is put back to the chosen record's name on leaving.
 */

const OPTIONS = 8

interface Option extends Choice {
  readonly matches?: Matches[string] | undefined
}

interface ListDocument {
  readonly data: readonly { id: string; attributes: { name?: string }; meta?: { matches?: Matches } }[]
}

export interface ComboboxProps {
  /** The input's id; the listbox's and options' ids are made from it. */
  readonly id: string
  readonly label: string
  /** The API type searched: `authors`, `book_collections`. */
  readonly type: string
  readonly value: Choice | null
  readonly onChange: (value: Choice | null) => void
  /** A refusal of the API about this field, shown under it. */
  readonly error?: string | undefined
  /** Offers a button that leaves the field empty. */
  readonly clearable?: boolean
}

export function Combobox(props: ComboboxProps) {
  const { id, label, type, value, onChange } = props
  const [text, setText] = useState(value?.name ?? '')
  const [open, setOpen] = useState(false)
  const [options, setOptions] = useState<readonly Option[]>([])
  const [active, setActive] = useState(-1)
  const [answered, setAnswered] = useState(false)
  const pending = useRef<AbortController | null>(null)
  const input = useRef<HTMLInputElement>(null)
  const listbox = `${id}-listbox`
  const errorId = `${id}-error`
  const optionId = (option: Option) => `${id}-option-${option.id}`

  // A value set from outside (another version loaded into the form) shows its name.
  useEffect(() => setText(value?.name ?? ''), [value?.id, value?.name])
  useEffect(() => () => pending.current?.abort(), [])
  useEffect(() => {
    const option = options[active]
    if (option) document.getElementById(optionId(option))?.scrollIntoView({ block: 'nearest' })
  }, [active, options])

  const search = (words: string) => {
    pending.current?.abort()
    const abort = new AbortController()
    pending.current = abort
    const params = !searchable(words)
      ? { sort: 'name', 'page[size]': OPTIONS, [`fields[${type}]`]: 'name' }
      : { 'filter[search]': words, 'page[size]': OPTIONS, [`fields[${type}]`]: 'name' }
    api<ListDocument>('GET', `/${type}${query(params)}`, { signal: abort.signal })
      .then(({ document }) => {
        setOptions(
          document.data.map((r) => ({ id: r.id, name: r.attributes.name ?? '', matches: r.meta?.matches?.name })),
        )
        setActive(-1)
        setAnswered(true)
      })
      .catch(() => {
        // Cancelled by the next keystroke, or refused: the options stay as they were.
      })
  }

  const openWith = (words: string) => {
    setOpen(true)
    setAnswered(false)
    search(words)
  }

  const close = () => {
    pending.current?.abort()
    setOpen(false)
    setActive(-1)
  }

  const choose = (option: Option | null) => {
    close()
    setText(option?.name ?? '')
    if (option?.id !== value?.id) onChange(option ? { id: option.id, name: option.name } : null)
  }

  /**
   * On leaving: an empty text is no record; an option's exact name, or the one option the text
   * narrowed the list to (`tolkien` for *J.R.R. Tolkien*), is that option; else the chosen name again.
   */
  const settle = () => {
    const typed = text.trim().toLocaleLowerCase()
    if (typed === '') return choose(null)
    const exact = options.find((o) => o.name.trim().toLocaleLowerCase() === typed)
    const only = options.length === 1 ? options[0] : undefined
    if (open && (exact ?? only)) return choose(exact ?? only ?? null)
    close()
    setText(value?.name ?? '')
  }

  const onKeyDown = (event: KeyboardEvent) => {
    if (event.altKey || event.ctrlKey || event.metaKey) return
    switch (event.key) {
      case 'ArrowDown':
        event.preventDefault()
        if (!open) openWith(text === value?.name ? '' : text)
        else if (options.length > 0) setActive((active + 1) % options.length)
        return
      case 'ArrowUp':
        event.preventDefault()
        if (!open) openWith(text === value?.name ? '' : text)
        else if (options.length > 0) setActive(active <= 0 ? options.length - 1 : active - 1)
        return
      case 'Enter': {
        // Enter picks the active option; with the list open it never sends the form.
        if (!open) return
        event.preventDefault()
        // Or the one option there is: the text narrowed the list to it.
        const option = options[active] ?? (options.length === 1 ? options[0] : undefined)
        if (option) choose(option)
        else close()
        return
      }
      case 'Escape':
        if (open) {
          event.preventDefault()
          close()
        } else if (text !== (value?.name ?? '')) {
          event.preventDefault()
          setText(value?.name ?? '')
        }
        return
    }
  }

  const activeOption = open ? options[active] : undefined
  return (
    <div class="field">
      <label for={id} id={`${id}-label`}>
        {label}
      </label>
      <div class="combobox">
        <input
          ref={input}
          id={id}
          type="text"
          role="combobox"
          aria-autocomplete="list"
          aria-expanded={open}
          aria-controls={listbox}
          aria-activedescendant={activeOption ? optionId(activeOption) : undefined}
          aria-invalid={props.error ? 'true' : undefined}
          aria-describedby={props.error ? errorId : undefined}
          autocomplete="off"
          spellcheck={false}
          value={text}
          onInput={(event) => {
            const words = (event.target as HTMLInputElement).value
            setText(words)
            // Emptied: the person is clearing the field, not looking for a record (Down lists them all).
            if (words === '') close()
            else openWith(words)
          }}
          onKeyDown={onKeyDown}
          onBlur={settle}
        />
        {props.clearable && value ? (
          <button
            type="button"
            class="clear secondary"
            aria-label={`Clear ${label.toLowerCase()}`}
            onClick={() => {
              choose(null)
              input.current?.focus()
            }}
          >
            Clear
          </button>
        ) : null}
        <div
          id={listbox}
          role="listbox"
          aria-labelledby={`${id}-label`}
          hidden={!open || options.length === 0}
          // Picking with the pointer must not take the focus from the input (which would settle it first).
          onMouseDown={(event) => event.preventDefault()}
        >
          {options.map((option, index) => (
            // The options are never focused: the keys are the input's, which names the active one
            // (aria-activedescendant), as the combobox pattern has it; a click is the pointer's way.
            // biome-ignore lint/a11y/useKeyWithClickEvents lint/a11y/useFocusableInteractive: the input takes the keys
            <div
              key={option.id}
              id={optionId(option)}
              role="option"
              aria-selected={index === active}
              onClick={() => choose(option)}
            >
              <Highlighted text={option.name} ranges={option.matches} />
            </div>
          ))}
        </div>
        {open && answered && options.length === 0 ? <p class="combobox-empty">No match for “{text.trim()}”</p> : null}
      </div>
      {props.error ? (
        <p id={errorId} class="field-error">
          {props.error}
        </p>
      ) : null}
    </div>
  )
}
