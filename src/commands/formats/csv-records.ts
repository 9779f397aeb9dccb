import { MAX_LINE_BYTES, NOT_UTF8, type PhysicalLine, TOO_LONG } from './line-reader'

/** A CSV record and the line it starts on, or why that record cannot be read. */
export type CsvRecord =
  | { readonly line: number; readonly fields: string[] }
  | { readonly line: number; readonly error: string }

/** A record whose quoted field goes on past the end of a line. */
interface OpenRecord {
  readonly line: number
  readonly fields: string[]
  /** The quoted field so far. */
  readonly field: string
  /** Characters read so far. */
  readonly length: number
  readonly fault: PhysicalLine['fault']
}

/**
 * Reads CSV records (RFC 4180) from lines: fields separated by commas (or the delimiter given: a
 * semicolon, a tab); a field in double quotes may hold delimiters, line breaks and doubled quotes
 * (`""` for `"`). A record ends at the first line
 * break outside quotes; a carriage return before it (CRLF) is not part of the last field, while a
 * line break inside quotes is kept as the file has it. A record that cannot be read is reported
 * with the line it starts on, and reading goes on at the next line.
 */
export class CsvRecords {
  /** The record being read, while a quoted field spans lines. */
  private open: OpenRecord | null = null

  constructor(private readonly delimiter = ',') {}

  /** The record that ends on this line, if one does; an empty line between records is skipped. */
  push(line: PhysicalLine): CsvRecord | null {
    const open = this.open
    if (!open) {
      if (line.fault === 'too-long') return { line: line.number, error: TOO_LONG }
      if (line.text === '' || line.text === '\r') return null
      // Most lines hold no quote: split them at once.
      if (!line.text.includes('"')) return this.finish(line.number, dropCr(line.text).split(this.delimiter), line.fault)
    }
    if (open && line.fault === 'too-long') {
      this.open = null
      return { line: open.line, error: TOO_LONG }
    }
    return this.parse(line, open)
  }

  /** At the end of the file: the record a quote left open, if any. */
  end(): CsvRecord | null {
    const open = this.open
    if (!open) return null
    this.open = null
    return { line: open.line, error: 'a quoted field is not closed before the end of the file' }
  }

  private parse(line: PhysicalLine, open: OpenRecord | null): CsvRecord | null {
    const text = line.text
    const start = open?.line ?? line.number
    const fields = open?.fields ?? []
    const fault = open?.fault ?? line.fault
    let field = open ? `${open.field}\n` : ''
    const length = (open?.length ?? 0) + text.length
    if (length > MAX_LINE_BYTES) {
      this.open = null
      return { line: start, error: TOO_LONG }
    }
    let i = 0
    let quoted = open !== null
    for (;;) {
      if (quoted) {
        const quote = text.indexOf('"', i)
        if (quote === -1) {
          // The field goes on on the next line.
          this.open = { line: start, fields, field: field + text.slice(i), length, fault }
          return null
        }
        field += text.slice(i, quote)
        if (text.charCodeAt(quote + 1) === 0x22) {
          field += '"'
          i = quote + 2
          continue
        }
        i = quote + 1
        quoted = false
        // After the closing quote: the delimiter, or the end of the record.
        const rest = i === text.length || (i === text.length - 1 && text[i] === '\r')
        if (rest) {
          fields.push(field)
          break
        }
        if (text[i] !== this.delimiter) {
          this.open = null
          return {
            line: start,
            error: 'text after the closing quote of a field (a quote inside a field is written "")',
          }
        }
        fields.push(field)
        field = ''
        i++
        if (i === text.length) {
          fields.push('')
          break
        }
      }
      if (text[i] === '"') {
        quoted = true
        i++
        continue
      }
      const next = text.indexOf(this.delimiter, i)
      const plain = next === -1 ? dropCr(text.slice(i)) : text.slice(i, next)
      if (plain.includes('"')) {
        this.open = null
        return {
          line: start,
          error: 'a quote inside a field that does not start with one (quote the field and write "")',
        }
      }
      fields.push(plain)
      if (next === -1) break
      i = next + 1
      if (i === text.length) {
        fields.push('')
        break
      }
    }
    this.open = null
    return this.finish(start, fields, fault)
  }

  private finish(line: number, fields: string[], fault: PhysicalLine['fault']): CsvRecord {
    if (fault === 'not-utf8') return { line, error: NOT_UTF8 }
    return { line, fields }
  }
}

function dropCr(text: string): string {
  return text.endsWith('\r') ? text.slice(0, -1) : text
}
