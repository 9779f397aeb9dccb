/**
 * The longest line (or CSV record) an import reads, in bytes: far more than any valid one holds
 * (three names of at most 1000 characters, each up to 4 bytes, doubled quotes or \u escapes), and a
 * bound on what one line can make the import hold in memory.
 */
export const MAX_LINE_BYTES = 64 * 1024
export const TOO_LONG = `longer than ${MAX_LINE_BYTES} bytes, which no valid line is`
/** A line whose bytes the encoding (UTF-8) does not read. */
export const NOT_UTF8 = 'not UTF-8 text'

/** One line of a file, without its line feed (a carriage return before it is kept). */
export interface PhysicalLine {
  /** From 1. */
  readonly number: number
  readonly text: string
  /** Why the line cannot be read, when it cannot: then `text` is empty or holds U+FFFD in place of bad bytes. */
  readonly fault?: 'not-utf8' | 'too-long'
}

const LINE_FEED = 0x0a
const strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
const lenient = new TextDecoder('utf-8', { ignoreBOM: true })
/**
 * `latin1` as browsers read it (the WHATWG Encoding Standard's label): Windows-1252, the superset
 * of ISO-8859-1 that spreadsheets on Windows write, where 0x80-0x9F are € ‘ ’ “ ” and the like.
 */
const latin1 = new TextDecoder('latin1')

/** How a file's bytes are read as text. */
export const encodings = ['utf-8', 'latin1'] as const
export type Encoding = (typeof encodings)[number]

/** Bytes as text: UTF-8 (null when they are not), or Latin-1, where every byte is a character. */
export function decodeBytes(bytes: Uint8Array, encoding: Encoding): string | null {
  if (encoding === 'latin1') return latin1.decode(bytes)
  try {
    return strict.decode(bytes)
  } catch {
    return null
  }
}

/**
 * Splits a byte stream into lines, read as UTF-8 (or Latin-1) one line at a time, so that a byte
 * that is not UTF-8 faults its own line only (a line feed byte is never part of a UTF-8 sequence,
 * nor anything but a line feed in Latin-1, so the split is exact). A line longer than MAX_LINE_BYTES
 * is not kept: its bytes are skipped up to the next line feed. Memory: one chunk of the stream and one line.
 */
export class LineReader {
  /** Bytes taken from the stream so far: how far the file has been read. */
  bytesRead = 0
  private number = 0

  constructor(
    private readonly stream: ReadableStream<Uint8Array>,
    private readonly encoding: Encoding = 'utf-8',
  ) {}

  /** The lines of each chunk, as each chunk arrives. */
  async *batches(): AsyncGenerator<PhysicalLine[]> {
    let carry: Uint8Array[] = []
    let carried = 0
    let tooLong = false
    for await (const chunk of this.stream) {
      this.bytesRead += chunk.length
      const lines: PhysicalLine[] = []
      let start = 0
      for (;;) {
        const end = chunk.indexOf(LINE_FEED, start)
        if (end === -1) break
        if (tooLong) {
          lines.push(this.line(new Uint8Array(), 'too-long'))
          tooLong = false
        } else if (carried + end - start > MAX_LINE_BYTES) {
          lines.push(this.line(new Uint8Array(), 'too-long'))
        } else {
          lines.push(
            this.line(carried === 0 ? chunk.subarray(start, end) : join([...carry, chunk.subarray(start, end)])),
          )
        }
        carry = []
        carried = 0
        start = end + 1
      }
      if (start < chunk.length && !tooLong) {
        const rest = chunk.subarray(start)
        if (carried + rest.length > MAX_LINE_BYTES) {
          tooLong = true
          carry = []
          carried = 0
        } else {
          // A copy: the stream may reuse its chunk's memory.
          carry.push(rest.slice())
          carried += rest.length
        }
      }
      if (lines.length > 0) yield lines
    }
    if (tooLong) yield [this.line(new Uint8Array(), 'too-long')]
    else if (carried > 0) yield [this.line(join(carry))]
  }

  private line(bytes: Uint8Array, fault?: PhysicalLine['fault']): PhysicalLine {
    const number = ++this.number
    if (fault) return { number, text: '', fault }
    let text = decodeBytes(bytes, this.encoding)
    if (text === null) return { number, text: lenient.decode(bytes), fault: 'not-utf8' }
    // A byte order mark opens the file, not its first name.
    if (number === 1 && this.encoding === 'utf-8' && text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    return { number, text }
  }
}

function join(parts: readonly Uint8Array[]): Uint8Array {
  const joined = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0))
  let offset = 0
  for (const part of parts) {
    joined.set(part, offset)
    offset += part.length
  }
  return joined
}
