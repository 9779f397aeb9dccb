import { expect, setDefaultTimeout } from 'bun:test'
import { join } from 'node:path'
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core'
import { DOCS_PATH, SPEC_PATH } from '../../src/http/openapi/openapi'
import { afterAll, beforeAll, CHROMIUM, describe, it } from '../support/chromium-tests'
import { BUILD_TIMEOUT_MS, compiledExecutable } from '../support/executable'
import { type ChildProcess, removeTempDirs, spawnChild, stopChildren, tempDir, WAIT_MS } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/*
 * The docs page as a browser shows it: Debian's Chromium, headless, against the compiled
 * executable, with every request to another origin refused, as on a network without internet.
 * .ci/run installs Chromium (the `chromium` package) where it is missing; without it, these tests
 * are not registered (chromium-tests.ts), and under CI=true the file fails.
 */

const JSON_API = 'application/vnd.api+json'
/** A page load draws a 4 MiB viewer: generous, for a loaded machine. */
const PAGE_MS = 30_000
const TEST_MS = 60_000
/** Every operation's Test Request, one after the other: about a second each, unloaded. */
const ALL_OPERATIONS_MS = 300_000

/** The records the README's example session creates, each the first of its type (id 1). */
const README_DATA = {
  authors: 'J.R.R. Tolkien',
  book_collections: 'Middle-earth',
  books: 'The Hobbit',
} as const satisfies Record<string, string>

interface Operation {
  readonly summary: string
}

interface Listed {
  readonly method: string
  readonly path: string
  readonly summary: string
}

let child: ChildProcess
let origin: string
let browser: Browser
let operations: Listed[]

beforeAll(
  async () => {
    const { path } = await compiledExecutable()
    const database = join(tempDir('catalogue-docs-'), 'docs.db')
    child = spawnChild([path], tempDir('catalogue-docs-cwd-'), {
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite://${database}`,
    })
    const listening = await child.waitForLog((line) => line.msg === 'listening')
    origin = `http://127.0.0.1:${new URL(String(listening.url)).port}`
    // The README's example session.
    const relationships = { author_id: 1, book_collection_id: 1 }
    for (const [type, name] of Object.entries(README_DATA)) {
      const created = await fetch(`${origin}/api/v1/${type}`, {
        method: 'POST',
        headers: { 'content-type': JSON_API, accept: JSON_API },
        body: JSON.stringify({ data: { type, attributes: { name, ...(type === 'books' ? relationships : {}) } } }),
      })
      expect(created.status).toBe(201)
    }
    const spec = (await (await fetch(`${origin}${SPEC_PATH}`)).json()) as {
      paths: Record<string, Record<string, Operation>>
    }
    operations = Object.entries(spec.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, operation]) => ({
        method: method.toUpperCase(),
        path,
        summary: operation.summary,
      })),
    )
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, chromiumSandbox: false })
  },
  BUILD_TIMEOUT_MS + 2 * WAIT_MS,
)

afterAll(async () => {
  await browser?.close()
  await stopChildren()
  removeTempDirs()
})

/** What went wrong on a page: requests to other origins, errors, what the CSP refused, and 404s. */
interface Watched {
  readonly page: Page
  readonly context: BrowserContext
  readonly offsite: string[]
  readonly errors: string[]
  violations(): Promise<string[]>
  /**
   * The paths the service answered 404 since the page opened, read from its request log: the
   * browser's own requests (its icon, say) are not the page's, and Playwright sees none of them.
   */
  notFound(): Promise<string[]>
}

async function openPage(): Promise<Watched> {
  const context = await browser.newContext()
  const offsite: string[] = []
  const errors: string[] = []
  // No internet: anything not for the service is refused, and noted.
  await context.route('**/*', (route) => {
    const url = route.request().url()
    if (url.startsWith(`${origin}/`)) return route.continue()
    offsite.push(url)
    return route.abort()
  })
  // Runs in the page, before its scripts: a refusal by the CSP is an event, not always a console error.
  await context.addInitScript(`
    window.cspViolations = []
    document.addEventListener('securitypolicyviolation', (e) =>
      window.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI + ' at ' + e.sourceFile + ':' + e.lineNumber))
  `)
  const page = await context.newPage()
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text())
  })
  page.on('pageerror', (error) => errors.push(error.message))
  const violations = () => page.evaluate<string[]>('window.cspViolations')
  const logged = child.logs.length
  const notFound = async () => {
    // A request of its own, answered after everything the browser asked: once it is logged, so are they.
    const marker = `${DOCS_PATH}/?logged=${logged}`
    await (await fetch(`${origin}${marker}`)).arrayBuffer()
    await child.waitForLog((line) => line.path === `${DOCS_PATH}/` && line.query === `logged=${logged}`)
    return child.logs
      .slice(logged)
      .filter((line) => line.status === 404)
      .map((line) => String(line.path))
  }
  return { page, context, offsite, errors, violations, notFound }
}

/**
 * Opens the Test Request client on `operation`, from the button of its section (drawn once the page
 * is scrolled to it), and gives its Send button.
 */
async function openClient(page: Page, { method, path }: Listed): Promise<{ client: Locator; send: Locator }> {
  // The sidebar's link gives the section's anchor (#tag/<tag>/<METHOD><path>).
  const href =
    (await page.locator(`a[href$="/${method}${path}"]`).first().getAttribute('href', { timeout: PAGE_MS })) ?? ''
  const anchor = href.slice(href.indexOf('#'))
  await page.evaluate(`location.hash = ${JSON.stringify(anchor)}`)
  const label = new RegExp(`^Test Request\\(${RegExp.escape(`${method.toLowerCase()} ${path}`)}\\)$`)
  await page.locator('button', { hasText: label }).click({ timeout: PAGE_MS })
  const client = page.getByRole('dialog')
  const send = client.getByRole('button', { name: new RegExp(`^Send ${method.toLowerCase()} request to `) }).first()
  await send.waitFor({ timeout: PAGE_MS })
  return { client, send }
}

interface Shown {
  readonly type: string
  readonly id: string
  readonly attributes?: { readonly name?: string }
  readonly relationships?: { readonly resource?: { readonly data: { readonly id: string } } }
}

/**
 * Whether a document's data holds the README's record of its type (for linkage, record 1; for the
 * change feed, a change of record 1).
 */
function found(document: { data: unknown }): boolean {
  const data = (Array.isArray(document.data) ? document.data : [document.data]) as Shown[]
  return data.some((resource) => {
    if (resource.type === 'changes') return resource.relationships?.resource?.data.id === '1'
    return resource.attributes === undefined
      ? resource.id === '1'
      : resource.attributes.name === README_DATA[resource.type as keyof typeof README_DATA]
  })
}

async function expectClean(watched: Watched): Promise<void> {
  expect(watched.offsite).toEqual([])
  expect(watched.errors).toEqual([])
  expect(await watched.violations()).toEqual([])
  expect(await watched.notFound()).toEqual([])
}

describe('the docs page in Chromium, from the compiled executable, without internet', () => {
  for (const path of [DOCS_PATH, `${DOCS_PATH}/`]) {
    it(
      `lists every operation of the OpenAPI document at ${path}, with nothing refused or failing`,
      async () => {
        const watched = await openPage()
        try {
          const { page } = watched
          await page.goto(`${origin}${path}`, { timeout: PAGE_MS })
          const last = operations.at(-1)
          if (!last) throw new Error('the document has no operation')
          // The sidebar links each operation as #tag/<tag>/<METHOD><path>.
          await page.locator(`a[href$="/${last.method}${last.path}"]`).first().waitFor({ timeout: PAGE_MS })
          const links = await page
            .locator('a[href*="#tag/"]')
            .evaluateAll((as) => as.map((a) => ({ href: a.getAttribute('href') ?? '', text: a.textContent ?? '' })))
          const missing = operations.filter(
            ({ method, path, summary }) =>
              !links.some((link) => link.href.endsWith(`/${method}${path}`) && link.text.includes(summary)),
          )
          expect(missing).toEqual([])
          expect(operations.length).toBeGreaterThan(30)
          // An icon of its own: a browser that draws one asks for nothing else (no /favicon.ico, a 404).
          const icon = await page.evaluate<{ status: number; type: string | null } | null>(`(async () => {
            const link = document.querySelector('link[rel~="icon"]')
            if (!link) return null
            const answer = await fetch(link.href)
            return { status: answer.status, type: answer.headers.get('content-type') }
          })()`)
          expect(icon).toEqual({ status: 200, type: 'image/svg+xml' })
          await expectClean(watched)
        } finally {
          await watched.context.close()
        }
      },
      TEST_MS,
    )
  }

  it(
    'sends "List authors" from its Test Request client, and the service answers it 200',
    async () => {
      const watched = await openPage()
      try {
        const { page } = watched
        await page.goto(`${origin}${DOCS_PATH}`, { timeout: PAGE_MS })
        // The first operation of the document, drawn first.
        await page
          .getByRole('button', { name: /Test Request/ })
          .first()
          .click({ timeout: PAGE_MS })
        const client = page.getByRole('dialog')
        // The client opens on the operation it was asked for: its Send button names the URL.
        const send = client.getByRole('button', { name: /^Send get request to .*\/api\/v1\/authors$/ }).first()
        await send.waitFor({ timeout: PAGE_MS })
        const answered = page.waitForResponse(
          (r) => r.request().method() === 'GET' && new URL(r.url()).pathname === '/api/v1/authors',
          { timeout: PAGE_MS },
        )
        await send.click()
        const response = await answered
        expect(response.status()).toBe(200)
        // The client fills in the examples it sends (not the filters'): the README's author.
        const body = (await response.json()) as { data: { attributes: { name: string } }[] }
        expect(body.data.map((author) => author.attributes.name)).toEqual([README_DATA.authors])
        await client.getByText('200 OK').first().waitFor({ timeout: PAGE_MS })
        // The service saw that very request.
        const id = response.headers()['x-request-id']
        const logged = await child.waitForLog((line) => line.msg === 'request' && line.request_id === id)
        expect(logged).toMatchObject({ method: 'GET', path: '/api/v1/authors', status: 200 })
        await expectClean(watched)
      } finally {
        await watched.context.close()
      }
    },
    TEST_MS,
  )

  it(
    "sends every operation's Test Request as the page fills it in: each is answered 2xx on the README's data, and no DELETE goes out without an id from the user",
    async () => {
      const watched = await openPage()
      const deletes: string[] = []
      watched.page.on('request', (request) => {
        if (request.method() === 'DELETE') deletes.push(request.url())
      })
      try {
        const { page } = watched
        await page.goto(`${origin}${DOCS_PATH}`, { timeout: PAGE_MS })
        const answers: { operation: string; status: number | '2xx'; found?: boolean }[] = []
        for (const operation of operations) {
          const { client, send } = await openClient(page, operation)
          const name = `${operation.method} ${operation.path}`
          if (operation.method === 'DELETE') {
            // The id is left to the user: the client refuses to send without it.
            await send.click()
            await page.getByText('Path parameters must have values').first().waitFor({ timeout: PAGE_MS })
          } else {
            const answered = page.waitForResponse(
              (r) => r.request().method() === operation.method && new URL(r.url()).pathname.startsWith('/api/v1/'),
              { timeout: PAGE_MS },
            )
            await send.click()
            const response = await answered
            // Drawn by the client once it has read the body: closing it sooner would cancel the read.
            await client
              .getByText(`${response.status()} ${response.statusText()}`)
              .first()
              .waitFor({ timeout: PAGE_MS })
            const status = response.status() >= 200 && response.status() < 300 ? '2xx' : response.status()
            const body = operation.method === 'GET' ? ((await response.json()) as { data: unknown }) : undefined
            answers.push({ operation: name, status, ...(body ? { found: found(body) } : {}) })
          }
          await page.keyboard.press('Escape')
          await client.waitFor({ state: 'hidden', timeout: PAGE_MS })
        }
        // Every GET found the README's record; every write succeeded.
        expect(answers).toEqual(
          answers.map(({ operation }) => ({
            operation,
            status: '2xx',
            ...(operation.startsWith('GET ') ? { found: true } : {}),
          })),
        )
        expect(answers.length).toBe(operations.filter((o) => o.method !== 'DELETE').length)
        expect(deletes).toEqual([])
        // The writes' examples changed nothing of the README's data (updates rename a record to its name).
        const book = await fetch(`${origin}/api/v1/books/1`, { headers: { accept: JSON_API } })
        const { included } = (await book.json()) as { included: { type: string; attributes: { name: string } }[] }
        expect(included.map((r) => [r.type, r.attributes.name])).toEqual([
          ['authors', README_DATA.authors],
          ['book_collections', README_DATA.book_collections],
        ])
        await expectClean(watched)
      } finally {
        await watched.context.close()
      }
    },
    ALL_OPERATIONS_MS,
  )
})

describe('the app in Chromium, from the compiled executable alone, without internet', () => {
  it(
    "opens on the book list with the README session's book, its files embedded in the executable (its folder has no app/)",
    async () => {
      const watched = await openPage()
      try {
        const { page } = watched
        await page.goto(`${origin}/`, { timeout: PAGE_MS })
        expect(new URL(page.url()).pathname).toBe('/app/')
        await page.getByRole('heading', { level: 1, name: 'Books' }).waitFor({ timeout: PAGE_MS })
        // The first of its name: the docs page's Test Requests above create more.
        const row = page.getByRole('row').filter({ hasText: README_DATA.books }).first()
        await row.waitFor({ timeout: PAGE_MS })
        expect(await row.getByRole('link', { name: README_DATA.authors }).count()).toBe(1)
        expect(await row.getByRole('link', { name: README_DATA.book_collections }).count()).toBe(1)
        await expectClean(watched)
      } finally {
        await watched.context.close()
      }
    },
    TEST_MS,
  )
})
