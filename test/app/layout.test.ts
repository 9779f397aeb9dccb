import { expect, setDefaultTimeout } from 'bun:test'
import type { Page } from 'playwright-core'
import { type AppSession, accessibilityViolations, openAppSession } from '../support/app-browser'
import { afterAll, beforeAll, describe, it } from '../support/chromium-tests'

/*
 * The app's pages as they are drawn: at a phone's width with names of one long word, in a dark
 * colour scheme, and named in the document's title. Each was found wanting by a trial of the app
 * as a hostile user would use it.
 */

setDefaultTimeout(60_000)

let session: AppSession
let author = ''

beforeAll(async () => {
  session = await openAppSession()
  const { t } = session
  author = await t.create('authors', { name: 'Ursula K. Le Guin' })
  await t.create('books', { name: 'A Wizard of Earthsea', author_id: Number(author) })
  // A name of one word 1,000 letters long: the API takes it, so the app must show it.
  await t.create('books', { name: 'Supercalifragilistic'.repeat(50), author_id: Number(author) })
})

afterAll(async () => {
  await session?.close()
})

/** How far the page reaches past the window's width: 0 where nothing scrolls sideways. */
const sideways = (page: Page) =>
  page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth')

describe('the app laid out', () => {
  it("an author's page does not scroll sideways at a phone's width when a book's name is one long word", async () => {
    const { page } = await session.page({ width: 390 })
    await page.goto(`/app/authors/${author}`)
    await page.getByRole('heading', { level: 2, name: 'Books' }).waitFor()
    expect(await sideways(page)).toBe(0)
  })

  it("a list does not scroll sideways at a phone's width when the search is one long word", async () => {
    const { page } = await session.page({ width: 390 })
    await page.goto(`/app/books?q=${'a'.repeat(300)}`)
    await page.getByRole('status').filter({ hasText: 'No books match' }).waitFor()
    expect(await sideways(page)).toBe(0)
  })

  it('marks matched words legibly in a dark colour scheme too (axe: no colour-contrast violation)', async () => {
    const { page } = await session.page()
    await page.emulateMedia({ colorScheme: 'dark' })
    await page.goto('/app/books?q=wizrd')
    await page.locator('mark').first().waitFor()
    expect(await accessibilityViolations(page)).toEqual([])
  })

  it('names each view in the document title (WCAG 2.4.2), and moves the focus to the heading of a view one goes to', async () => {
    const { page } = await session.page()
    await page.goto('/app/authors')
    await page.getByRole('heading', { level: 1, name: 'Authors' }).waitFor()
    expect(await page.title()).toBe('Authors · Library catalogue')
    await page.getByRole('link', { name: 'Ursula K. Le Guin', exact: true }).click()
    const heading = page.getByRole('heading', { level: 1, name: 'Ursula K. Le Guin' })
    await heading.waitFor()
    await page.waitForFunction('document.activeElement?.tagName === "H1"')
    expect(await page.title()).toBe('Ursula K. Le Guin · Library catalogue')
    // Typing on the app's front page (/app/, the book list) keeps the focus in the search box, though
    // the URL becomes /app/books.
    await page.goto('/app/')
    await page.getByLabel('Search books').pressSequentially('wiz')
    await page.getByRole('status').filter({ hasText: '1 book' }).waitFor()
    expect(new URL(page.url()).pathname).toBe('/app/books')
    expect(await page.evaluate('document.activeElement?.id')).toBe('list-search')
    // A new search of the same list keeps the focus in the search box.
    await page.getByRole('navigation', { name: 'Catalogue' }).getByRole('link', { name: 'Authors' }).click()
    await page.getByLabel('Search authors').fill('guin')
    await page.getByRole('status').filter({ hasText: '1 author' }).waitFor()
    expect(await page.evaluate('document.activeElement?.id')).toBe('list-search')
  })
})
