import { expect, setDefaultTimeout } from 'bun:test'
import type { Page } from 'playwright-core'
import { type AppSession, openAppSession } from '../support/app-browser'
import { afterAll, beforeAll, describe, it } from '../support/chromium-tests'

// A browser, a server and a database each: more than Bun's 5 s default on a busy machine.
setDefaultTimeout(60_000)

/** What the issue allows between a write anywhere and an open page showing it. */
const LIVE_MS = 2000

let session: AppSession
let leGuin: string
let earthsea: string

beforeAll(async () => {
  session = await openAppSession()
  const { t } = session
  leGuin = await t.create('authors', { name: 'Ursula K. Le Guin' })
  earthsea = await t.create('book_collections', { name: 'Earthsea' })
  await t.create('books', {
    name: 'A Wizard of Earthsea',
    author_id: Number(leGuin),
    book_collection_id: Number(earthsea),
  })
  await t.create('books', { name: 'The Dispossessed', author_id: Number(leGuin) })
})

afterAll(async () => {
  await session?.close()
})

/** A page of the app, open at `path`, once it follows the feed (its header says `Live`). */
async function openLive(path: string): Promise<Page> {
  const { page } = await session.page()
  await page.goto(path)
  await page.getByText('Live', { exact: true }).waitFor()
  return page
}

async function rename(type: string, id: string, name: string): Promise<void> {
  const answer = await session.t.request('PATCH', `/api/v1/${type}/${id}`, {
    body: { data: { type, id, attributes: { name } } },
  })
  expect(answer.status).toBe(200)
}

async function remove(type: string, id: string): Promise<void> {
  expect((await session.t.request('DELETE', `/api/v1/${type}/${id}`)).status).toBe(204)
}

describe('the app follows the change feed', () => {
  it('shows a book created, renamed and deleted by anyone in an open list within 2 s, without a reload', async () => {
    const page = await openLive('/app/books')
    await page.getByRole('status').filter({ hasText: '2 books' }).waitFor()
    const loads: string[] = []
    page.on('framenavigated', (frame) => loads.push(frame.url()))

    const id = await session.t.create('books', { name: 'The Lathe of Heaven', author_id: Number(leGuin) })
    await page.getByRole('link', { name: 'The Lathe of Heaven' }).waitFor({ timeout: LIVE_MS })
    await page.getByRole('status').filter({ hasText: '3 books' }).waitFor({ timeout: LIVE_MS })

    await rename('books', id, 'The Lathe of Heaven (1971)')
    await page.getByRole('link', { name: 'The Lathe of Heaven (1971)' }).waitFor({ timeout: LIVE_MS })

    await remove('books', id)
    await page
      .getByRole('link', { name: 'The Lathe of Heaven (1971)' })
      .waitFor({ state: 'detached', timeout: LIVE_MS })
    await page.getByRole('status').filter({ hasText: '2 books' }).waitFor({ timeout: LIVE_MS })
    expect(loads).toEqual([])
  })

  it('keeps the search being typed, its focus and the page while rows follow a change', async () => {
    const page = await openLive('/app/books')
    const search = page.getByLabel('Search books')
    await search.pressSequentially('earth')
    await page.getByRole('status').filter({ hasText: '1 book' }).waitFor()

    const id = await session.t.create('books', { name: 'Tales from Earthsea', author_id: Number(leGuin) })
    await page.getByRole('link', { name: 'Tales from Earthsea' }).waitFor({ timeout: LIVE_MS })
    expect(await search.inputValue()).toBe('earth')
    expect(await search.evaluate((element) => element === element.ownerDocument.activeElement)).toBe(true)
    // The user goes on typing where they were.
    await search.press('End')
    await search.pressSequentially('sea tales')
    await page.getByRole('status').filter({ hasText: '1 book' }).waitFor()
    expect(new URL(page.url()).searchParams.get('q')).toBe('earthsea tales')
    await remove('books', id)
  })

  it('shows an author renamed in the book list that shows them', async () => {
    const page = await openLive('/app/books')
    await page.getByRole('link', { name: 'Ursula K. Le Guin' }).first().waitFor()
    await rename('authors', leGuin, 'Ursula Kroeber Le Guin')
    await page.getByRole('link', { name: 'Ursula Kroeber Le Guin' }).first().waitFor({ timeout: LIVE_MS })
    await rename('authors', leGuin, 'Ursula K. Le Guin')
  })

  it('follows a record on its page: renamed, its collection renamed, then deleted, said so', async () => {
    const id = await session.t.create('books', {
      name: 'The Farthest Shore',
      author_id: Number(leGuin),
      book_collection_id: Number(earthsea),
    })
    const page = await openLive(`/app/books/${id}`)
    await page.getByRole('heading', { level: 1, name: 'The Farthest Shore' }).waitFor()

    await rename('books', id, 'The Farthest Shore (1972)')
    await page.getByRole('heading', { level: 1, name: 'The Farthest Shore (1972)' }).waitFor({ timeout: LIVE_MS })

    await rename('book_collections', earthsea, 'The Earthsea Cycle')
    await page.getByRole('link', { name: 'The Earthsea Cycle' }).waitFor({ timeout: LIVE_MS })
    await rename('book_collections', earthsea, 'Earthsea')

    await remove('books', id)
    await page.getByRole('alert').filter({ hasText: 'This book has been deleted' }).waitFor({ timeout: LIVE_MS })
    // What it was stays in sight.
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('The Farthest Shore (1972)')
  })

  it("shows on an author's page a book another page deletes", async () => {
    const id = await session.t.create('books', { name: 'Always Coming Home', author_id: Number(leGuin) })
    const authorPage = await openLive(`/app/authors/${leGuin}`)
    await authorPage.getByRole('link', { name: 'Always Coming Home' }).waitFor()
    const bookPage = await openLive(`/app/books/${id}`)
    await bookPage.getByRole('heading', { level: 1, name: 'Always Coming Home' }).waitFor()

    // Another person, in another browser, deletes the book from the list.
    const listPage = await openLive('/app/books?q=always')
    await listPage.getByRole('checkbox', { name: 'Select Always Coming Home' }).check()
    await listPage.getByRole('button', { name: 'Delete selected' }).click()
    await listPage.getByRole('dialog').getByRole('button', { name: 'Delete' }).click()
    await listPage.getByRole('status').filter({ hasText: 'Deleted 1 book' }).waitFor()

    await authorPage.getByRole('link', { name: 'Always Coming Home' }).waitFor({ state: 'detached', timeout: LIVE_MS })
    await bookPage.getByRole('alert').filter({ hasText: 'This book has been deleted' }).waitFor({ timeout: LIVE_MS })
  })
})
