import { expect, setDefaultTimeout } from 'bun:test'
import { type AppSession, accessibilityViolations, openAppSession, sidewaysScroll } from '../support/app-browser'
import { afterAll, beforeAll, describe, it } from '../support/chromium-tests'

// A browser, a server and a database each: more than Bun's 5 s default on a busy machine.
setDefaultTimeout(60_000)

let session: AppSession

beforeAll(async () => {
  session = await openAppSession()
  const { t } = session
  const leGuin = await t.create('authors', { name: 'Ursula K. Le Guin' })
  const tolkien = await t.create('authors', { name: 'J.R.R. Tolkien' })
  const earthsea = await t.create('book_collections', { name: 'Earthsea' })
  await t.create('books', {
    name: 'A Wizard of Earthsea',
    author_id: Number(leGuin),
    book_collection_id: Number(earthsea),
  })
  await t.create('books', {
    name: 'The Tombs of Atuan',
    author_id: Number(leGuin),
    book_collection_id: Number(earthsea),
  })
  await t.create('books', { name: 'The Dispossessed', author_id: Number(leGuin) })
  await t.create('books', { name: 'The Hobbit', author_id: Number(tolkien) })
})

afterAll(async () => {
  await session?.close()
})

describe('the app at /app/', () => {
  it('is where a browser asking for / is sent, and opens on the book list', async () => {
    const { page, errors } = await session.page()
    // What Chromium asks for when it opens a page, sent to /; the browser itself following the 303
    // is tested with the executable (test/build/docs-browser.test.ts).
    let accept = ''
    page.on('request', (request) => {
      if (request.isNavigationRequest()) accept ||= request.headers().accept ?? ''
    })
    await page.goto('/app/')
    expect(accept).toStartWith('text/html')
    const sent = await page.request.get('/', { headers: { accept }, maxRedirects: 0 })
    expect(sent.status()).toBe(303)
    expect(sent.headers().location).toBe('/app/')
    await expect(page.getByRole('heading', { level: 1, name: 'Books' }).isVisible()).resolves.toBe(true)
    const nav = page.getByRole('navigation', { name: 'Catalogue' })
    for (const name of ['Books', 'Authors', 'Collections']) {
      expect(await nav.getByRole('link', { name }).count()).toBe(1)
    }
    await page.getByRole('status').filter({ hasText: '4 books' }).waitFor()
    expect(await page.getByRole('row').count()).toBe(5)
    expect(errors).toEqual([])
    expect(session.elsewhere).toEqual([])
  })

  it('finds books as one types, a typo forgiven, the matched words marked, and keeps the search in the URL', async () => {
    const { page } = await session.page()
    await page.goto('/app/books')
    await page.getByRole('status').filter({ hasText: '4 books' }).waitFor()
    await page.getByLabel('Search books').pressSequentially('earthsea wizrd')
    await page.getByRole('status').filter({ hasText: '1 book' }).waitFor()
    const row = page.getByRole('row').nth(1)
    expect(await row.getByRole('link').first().textContent()).toBe('A Wizard of Earthsea')
    expect(await row.locator('mark').allTextContents()).toEqual(['Wizard', 'Earthsea', 'Earthsea'])
    expect(new URL(page.url()).searchParams.get('q')).toBe('earthsea wizrd')
    await page.reload()
    await page.getByRole('status').filter({ hasText: '1 book' }).waitFor()
    expect(await page.getByLabel('Search books').inputValue()).toBe('earthsea wizrd')
  })

  it('takes a search box holding no letter or digit (emoji, punctuation) as no search, not as an error', async () => {
    const { page, errors } = await session.page()
    await page.goto('/app/books')
    await page.getByRole('status').filter({ hasText: '4 books' }).waitFor()
    await page.getByLabel('Search books').fill('📚 …!')
    await page.locator('table[aria-busy="false"]').waitFor()
    expect(new URL(page.url()).searchParams.get('q')).toBe('📚 …!')
    await page.getByRole('status').filter({ hasText: '4 books' }).waitFor()
    expect(await page.getByRole('alert').count()).toBe(0)
    expect(errors).toEqual([])
  })

  it('says a page it cannot show (an old or mangled cursor in its URL) could not be shown, with a way to the first page', async () => {
    const { page } = await session.page()
    await page.goto('/app/books?sort=name&after=not-a-cursor')
    const alert = page.getByRole('alert')
    await alert.filter({ hasText: 'This page of the list could not be shown' }).waitFor()
    await alert.getByRole('link', { name: 'Go to the first page' }).click()
    await page.getByRole('status').filter({ hasText: '4 books' }).waitFor()
    expect(new URL(page.url()).search).toBe('')
  })

  it('shows a record with links to its related records', async () => {
    const { page } = await session.page()
    await page.goto('/app/books')
    await page.getByRole('link', { name: 'The Tombs of Atuan' }).click()
    await page.getByRole('heading', { level: 1, name: 'The Tombs of Atuan' }).waitFor()
    await page.getByRole('link', { name: 'Ursula K. Le Guin' }).click()
    await page.getByRole('heading', { level: 1, name: 'Ursula K. Le Guin' }).waitFor()
    expect(await page.getByRole('link', { name: 'The Dispossessed' }).count()).toBe(1)
  })

  it('has no WCAG 2.1 A or AA violation on the list, and no sideways scroll at a phone width', async () => {
    const { page } = await session.page({ width: 390, height: 844 })
    await page.goto('/app/books?q=the')
    await page.getByRole('status').filter({ hasText: 'books' }).waitFor()
    expect(await accessibilityViolations(page)).toEqual([])
    expect(await sidewaysScroll(page)).toBeLessThanOrEqual(0)
  })
})
