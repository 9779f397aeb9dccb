import axe from 'axe-core'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import { CHROMIUM } from './chromium-tests'
import { openTestApp, type TestApp, type TestAppOptions } from './harness'

/*
 * The browser app (app/) as a person uses it: the real service over the backend TEST_DATABASE_URL
 * chooses, listening on a free port of this process, and Debian's Chromium, headless, driven by
 * playwright-core. Every request to another origin is refused and counted: the app must need none.
 * Tests find things by role and label, as a person (or a screen reader) does.
 */

export interface AppSession {
  readonly t: TestApp
  /** http://127.0.0.1:<port> */
  readonly origin: string
  readonly browser: Browser
  /** Requests the pages asked of another origin (refused): none is expected. */
  readonly elsewhere: string[]
  /** A new page in a context of its own (its own sessionStorage), errors of its scripts collected. */
  page(options?: { width?: number; height?: number }): Promise<AppPage>
  close(): Promise<void>
}

export interface AppPage {
  readonly page: Page
  readonly context: BrowserContext
  /** What the page's scripts threw or logged as errors, and what its CSP refused. */
  readonly errors: string[]
}

export async function openAppSession(options: TestAppOptions = {}): Promise<AppSession> {
  const t = await openTestApp(options)
  t.app.listen({ port: 0, hostname: '127.0.0.1' })
  const port = t.app.server?.port
  if (!port) throw new Error('the app did not listen')
  const origin = `http://127.0.0.1:${port}`
  // The app is bundled at its first request, on this thread, which also reads the browser's
  // messages: built before the browser starts. (The first test of a file, whose first navigation
  // waited on the build, failed twice in CI inside playwright-core: "Object with guid
  // response@... was not bound in the connection".)
  const warm = await fetch(`${origin}/app/`)
  await warm.arrayBuffer()
  if (warm.status !== 200) throw new Error(`the app's page answered ${warm.status}`)
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, chromiumSandbox: false })
  const elsewhere: string[] = []
  const contexts: BrowserContext[] = []
  return {
    t,
    origin,
    browser,
    elsewhere,
    async page({ width = 1200, height = 800 } = {}) {
      const context = await browser.newContext({ viewport: { width, height }, baseURL: origin })
      contexts.push(context)
      // Only requests to another origin are intercepted (and aborted): the page's own go as they are.
      await context.route(
        (url) => url.origin !== origin,
        (route) => {
          elsewhere.push(route.request().url())
          return route.abort()
        },
      )
      // A refusal by the CSP is an event, not always a console error: said as one, so that `errors` holds it.
      await context.addInitScript(`
        document.addEventListener('securitypolicyviolation', (e) =>
          console.error('CSP refused ' + e.violatedDirective + ' ' + e.blockedURI + ' at ' + e.sourceFile + ':' + e.lineNumber))
      `)
      const page = await context.newPage()
      const errors: string[] = []
      page.on('pageerror', (error) => errors.push(String(error)))
      page.on('console', (message) => {
        if (message.type() === 'error') errors.push(message.text())
      })
      return { page, context, errors }
    },
    async close() {
      for (const context of contexts) await context.close().catch(() => {})
      await browser.close()
      await t.app.stop(true)
      await t.close()
    },
  }
}

/** The rules the app is held to: WCAG 2.1 A and AA, as axe-core tags them. */
const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']

export interface Violation {
  readonly id: string
  readonly help: string
  readonly targets: string[]
}

/** axe-core's violations of WCAG 2.1 A and AA on the page as it is now (none expected). */
export async function accessibilityViolations(page: Page): Promise<Violation[]> {
  // Evaluated through the browser's debugging protocol, which the page's CSP does not govern.
  await page.evaluate(axe.source)
  return page.evaluate(async (tags) => {
    const { axe: axeGlobal, document } = globalThis as unknown as { axe: typeof axe; document: axe.ElementContext }
    const result = await axeGlobal.run(document, { runOnly: { type: 'tag', values: tags } })
    return result.violations.map((v) => ({
      id: v.id,
      help: v.help,
      targets: v.nodes.map((n) => String(n.target)),
    }))
  }, WCAG_TAGS)
}

/** How far the page reaches past the window's width (its scrollbar included): 0 or less where nothing scrolls sideways. */
export function sidewaysScroll(page: Page): Promise<number> {
  return page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth')
}
