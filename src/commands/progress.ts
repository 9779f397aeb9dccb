/** Fewest milliseconds between two drawings of the bar: about ten a second. */
const REDRAW_MS = 100
const BAR_WIDTH = 30
/** Back to the start of the line and clear it. */
const CLEAR_LINE = '\r\x1b[2K'

/** The stream a command reports on: stderr, so that stdout holds only data (an export's lines). */
export interface ReportStream {
  readonly isTTY?: boolean
  write(text: string): unknown
}

/**
 * Prints a line on stderr as it is: console.error would colour it red on a terminal, and a summary
 * is no error.
 */
export function say(line: string): void {
  process.stderr.write(`${line}\n`)
}

/** `1 book`, `2 books`. */
export function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`
}

/** 1536 -> `1.5 KB`: bytes as a person reads them. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB']
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`
}

/**
 * How far a long command is. On a terminal, a bar on one line redrawn at most ten times a second,
 * with any message printed above it; elsewhere (a pipe, a file, a log collector) no bar, only the
 * messages: the command ends with one summary line either way.
 */
export class Progress {
  private lastDraw = 0
  private shown = false
  private done = 0

  constructor(
    private readonly label: string,
    private total: number,
    /** `1.5 MB / 3.0 MB` for bytes, `1500 / 3000 books` for a count. */
    private readonly format: (done: number, total: number) => string,
    private readonly stream: ReportStream = process.stderr,
  ) {}

  private get bar(): boolean {
    return this.stream.isTTY === true
  }

  /** Sets how much is done (and the total, when it grew); redraws unless it did so very recently. */
  update(done: number, total = this.total): void {
    this.done = done
    this.total = total
    if (!this.bar) return
    const now = performance.now()
    if (this.shown && now - this.lastDraw < REDRAW_MS) return
    this.lastDraw = now
    this.draw()
  }

  private draw(): void {
    const ratio = this.total > 0 ? Math.min(1, this.done / this.total) : 1
    const filled = Math.round(ratio * BAR_WIDTH)
    const bar = `${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}`
    const percent = `${Math.floor(ratio * 100)}%`.padStart(4)
    this.stream.write(`${CLEAR_LINE}${this.label} [${bar}] ${percent}  ${this.format(this.done, this.total)}`)
    this.shown = true
  }

  /** Prints a line of its own (a bad line's report), above the bar on a terminal. */
  note(line: string): void {
    if (this.shown) this.stream.write(CLEAR_LINE)
    this.stream.write(`${line}\n`)
    if (this.shown) this.draw()
  }

  /** Draws the bar full one last time and ends its line, so that the summary comes below it. */
  finish(): void {
    if (!this.bar) return
    this.draw()
    this.stream.write('\n')
    this.shown = false
  }
}
