/**
 * `bun run bench -- app [--backends sqlite,postgres] [--seed N]`: issue 35's figures of the browser
 * app at 100,000 books, in Debian's Chromium driven by playwright-core (headless, on core 1 with
 * the bench; the service pinned to core 0):
 * - the app's size: its scripts, styles and page as served, gzipped (target: 150 KB in all);
 * - the first list: from opening /app/ in a new browser context (nothing cached) to the first page
 *   of books in the table, FIRST_LISTS times (target: 1 s);
 * - keystroke to rows: titles of the catalogue (the search bench's `typing` queries, drawn with the
 *   seed) typed into `Search books` a key at a time from an empty box; each key is timed from the
 *   key press to the table holding the rows of the text typed so far (`aria-busy` false for the
 *   URL's search: list-view.tsx). Target: 300 ms. Beside it, the reference: the same page asked of
 *   the API by the bench itself (fetch, to the last byte), so that the app's own share shows.
 * The catalogue is the search bench's (catalogue.ts), imported as it does (load.ts).
 */
import { chromium, type Page } from 'playwright-core'
import type { RunningServer } from '../../harness/servers'
import { readCatalogueWords } from '../search/catalogue-words'
import { queryFamily } from '../search/family'
import { loadCatalogue, type SearchBackend } from '../search/load'
import { serviceUnderTest } from '../search/under-test'

type Track = (server: RunningServer) => void

/** The value below which `p` percent of `values` lie (nearest rank). */
function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN
}

const BOOKS = 100_000
const FIRST_LISTS = 5
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const TARGETS = { bundleKb: 150, firstListMs: 1000, keystrokeMs: 300 }

const say = (line: string) => process.stderr.write(`app: ${line}\n`)
const ms = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(1))

interface Keystroke {
  readonly text: string
  readonly appMs: number
  readonly apiMs: number
}

interface Cell {
  readonly backend: SearchBackend
  readonly bundleBytes: number
  readonly firstLists: number[]
  readonly keystrokes: Keystroke[]
}

/** The gzipped bytes of the page and every file it names under /app/. */
async function bundleBytes(origin: string): Promise<number> {
  const gzipped = async (path: string) =>
    (
      await fetch(`${origin}${path}`, { headers: { 'accept-encoding': 'gzip' }, decompress: false }).then((r) =>
        r.arrayBuffer(),
      )
    ).byteLength
  const page = await (await fetch(`${origin}/app/`)).text()
  const files = [...page.matchAll(/(?:src|href)="\.\/([^"]+)"/g)].map((m) => `/app/${m[1]}`)
  let total = await gzipped('/app/')
  for (const file of files) total += await gzipped(file)
  return total
}

async function firstList(origin: string, browser: import('playwright-core').Browser): Promise<number> {
  const context = await browser.newContext()
  try {
    const page = await context.newPage()
    const started = performance.now()
    await page.goto(`${origin}/app/`)
    await page.locator('table[aria-busy="false"] tbody tr').first().waitFor({ timeout: 30_000 })
    return performance.now() - started
  } finally {
    await context.close()
  }
}

/** The texts typed: each `typing` title of the family, whole, typed from an empty box. */
function typedTexts(family: ReturnType<typeof queryFamily>): string[] {
  const typing = family.filter((q) => q.kind === 'typing').map((q) => q.text)
  // The last keystroke of each title: a text not the prefix of the next one.
  return typing.filter((text, i) => !(typing[i + 1] ?? '').startsWith(text))
}

async function apiPage(origin: string, text: string): Promise<number> {
  const query = new URLSearchParams({
    include: 'author,book_collection',
    'filter[search]': text,
    'page[size]': '20',
    'page[number]': '1',
  })
  const started = performance.now()
  const response = await fetch(`${origin}/api/v1/books?${query}`, { headers: { accept: 'application/vnd.api+json' } })
  await response.arrayBuffer()
  return performance.now() - started
}

async function typeTimed(page: Page, origin: string, text: string): Promise<Keystroke[]> {
  const box = page.getByLabel('Search books')
  await box.fill('')
  await page.locator('table[aria-busy="false"]').waitFor()
  const timed: Keystroke[] = []
  for (let i = 1; i <= text.length; i++) {
    const typed = text.slice(0, i)
    const started = performance.now()
    await box.press(typed.at(-1) === ' ' ? 'Space' : (typed.at(-1) as string))
    // The rows of exactly this text: the URL holds it and the table is no longer busy.
    // A function, not a string: the app's CSP refuses eval.
    await page.waitForFunction(
      (want) => {
        const page = globalThis as unknown as {
          location: { href: string }
          document: { querySelector(selector: string): { getAttribute(name: string): string | null } | null }
        }
        return (
          new URL(page.location.href).searchParams.get('q') === want &&
          page.document.querySelector('table')?.getAttribute('aria-busy') === 'false'
        )
      },
      typed,
      { polling: 'raf', timeout: 30_000 },
    )
    const appMs = performance.now() - started
    if (typed.trim() === '' || typed.endsWith(' ')) continue
    timed.push({ text: typed, appMs, apiMs: await apiPage(origin, typed) })
  }
  return timed
}

async function measureCell(backend: SearchBackend, seed: number, dir: string, track: Track): Promise<Cell> {
  const catalogue = await loadCatalogue(backend, BOOKS, dir)
  try {
    const words = await readCatalogueWords(catalogue.url, BOOKS)
    const texts = typedTexts(queryFamily(words, seed))
    const service = await serviceUnderTest(catalogue.url, track)
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, chromiumSandbox: false })
    try {
      const bytes = await bundleBytes(service.origin)
      // The first request builds the app from the source (the executable has it built): not timed.
      await firstList(service.origin, browser)
      const firstLists: number[] = []
      for (let i = 0; i < FIRST_LISTS; i++) firstLists.push(await firstList(service.origin, browser))
      const context = await browser.newContext()
      const page = await context.newPage()
      await page.goto(`${service.origin}/app/books`)
      const keystrokes: Keystroke[] = []
      for (const text of texts) keystrokes.push(...(await typeTimed(page, service.origin, text)))
      await context.close()
      say(`${backend}: ${texts.length} titles typed, ${keystrokes.length} keystrokes`)
      return { backend, bundleBytes: bytes, firstLists, keystrokes }
    } finally {
      await browser.close()
      await service.stop()
    }
  } finally {
    await catalogue.remove()
  }
}

function report(cells: readonly Cell[], seed: number): string {
  const lines = [
    `### The browser app at ${BOOKS.toLocaleString('en-US')} books (issue 35), seed ${seed}`,
    '',
    '| backend | app gzipped | first list: median / worst ms | keystroke to rows: median / p90 / worst ms (text) | the API alone for those pages: median / p90 / worst ms | keystrokes over 300 ms |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
  ]
  for (const cell of cells) {
    const app = cell.keystrokes.map((k) => k.appMs)
    const api = cell.keystrokes.map((k) => k.apiMs)
    const worst = cell.keystrokes.reduce((a, b) => (b.appMs > a.appMs ? b : a), cell.keystrokes[0] as Keystroke)
    lines.push(
      `| ${cell.backend} | ${(cell.bundleBytes / 1024).toFixed(1)} KB (target ${TARGETS.bundleKb}) | ${ms(percentile(cell.firstLists, 50))} / ${ms(Math.max(...cell.firstLists))} (target ${TARGETS.firstListMs}) | ${ms(percentile(app, 50))} / ${ms(percentile(app, 90))} / ${ms(worst.appMs)} (\`${worst.text}\`) | ${ms(percentile(api, 50))} / ${ms(percentile(api, 90))} / ${ms(Math.max(...api))} | ${app.filter((v) => v > TARGETS.keystrokeMs).length} of ${app.length} |`,
    )
  }
  return lines.join('\n')
}

export async function appBench(argv: readonly string[], dir: string, track: Track): Promise<number> {
  const at = (flag: string) => (argv.includes(flag) ? argv[argv.indexOf(flag) + 1] : undefined)
  const backends = (at('--backends') ?? 'sqlite,postgres').split(',') as SearchBackend[]
  const seed = Number(at('--seed') ?? Number(new Date().toISOString().slice(0, 10).replaceAll('-', '')))
  if (backends.some((b) => b !== 'sqlite' && b !== 'postgres') || !Number.isSafeInteger(seed)) {
    console.error('bench: app takes --backends sqlite,postgres and --seed N')
    return 2
  }
  const cells: Cell[] = []
  for (const backend of backends) cells.push(await measureCell(backend, seed, dir, track))
  console.log(`\n${report(cells, seed)}`)
  return 0
}
