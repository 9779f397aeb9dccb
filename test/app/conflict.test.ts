import { expect, setDefaultTimeout } from 'bun:test'
import type { Page } from 'playwright-core'
import { type AppSession, accessibilityViolations, openAppSession, sidewaysScroll } from '../support/app-browser'
import { afterAll, beforeAll, describe, it } from '../support/chromium-tests'

// A browser, a server and a database each: more than Bun's 5 s default on a busy machine.
setDefaultTimeout(60_000)

/*
 * Two librarians, one book: each page is a browser context of its own (its own tab, storage and
 * stream), as two people on two machines. Neither may overwrite the other without knowing it.
 */

let session: AppSession
let leGuin: string

beforeAll(async () => {
  session = await openAppSession()
  leGuin = await session.t.create('authors', { name: 'Ursula K. Le Guin' })
})

afterAll(async () => {
  await session?.close()
})

const book = (name: string) => session.t.create('books', { name, author_id: Number(leGuin) })

/** Opens a book's edit form, and waits until the page follows the change feed. */
async function openForm(page: Page, id: string, title: string): Promise<void> {
  const following = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/v1/changes')
  await page.goto(`/app/books/${id}/edit`)
  await page.getByRole('heading', { level: 1, name: `Edit “${title}”` }).waitFor()
  await following
}

describe('never overwriting a colleague', () => {
  it('refuses the second of two saves from the same version (412): an alert with the book as it is now, what was typed kept until one chooses', async () => {
    const id = await book('The Left Hand of Darkness')
    const alice = (await session.page()).page
    const bob = (await session.page({ width: 390, height: 844 })).page
    await openForm(alice, id, 'The Left Hand of Darkness')
    await openForm(bob, id, 'The Left Hand of Darkness')
    const answers: number[] = []
    bob.on('response', (r) => {
      if (r.request().method() === 'PATCH') answers.push(r.status())
    })

    await alice.getByLabel('Title').fill('The Left Hand of Darkness (50th anniversary)')
    await alice.getByRole('button', { name: 'Save' }).click()
    await alice.getByRole('status').filter({ hasText: 'Saved' }).waitFor()

    await bob.getByLabel('Title').fill('The Left Hand of Darkness, revised')
    await bob.getByRole('button', { name: 'Save' }).click()
    const alert = bob.getByRole('alert').filter({ hasText: 'changed by someone else since you opened it' })
    await alert.waitFor()
    expect(answers).toEqual([412])
    expect(await alert.textContent()).toContain('The Left Hand of Darkness (50th anniversary)')
    expect(await bob.getByLabel('Title').inputValue()).toBe('The Left Hand of Darkness, revised')
    expect(new URL(bob.url()).pathname).toBe(`/app/books/${id}/edit`)
    expect((await session.t.stored('books')).find((r) => String(r.id) === id)?.name).toBe(
      'The Left Hand of Darkness (50th anniversary)',
    )
    expect(await accessibilityViolations(bob)).toEqual([])
    expect(await sidewaysScroll(bob)).toBeLessThanOrEqual(0)

    // Their version, loaded into the form, is what the next save starts from.
    await alert.getByRole('button', { name: 'Use their version' }).click()
    expect(await bob.getByLabel('Title').inputValue()).toBe('The Left Hand of Darkness (50th anniversary)')
    expect(await bob.getByRole('alert').count()).toBe(0)
    await bob.getByLabel('Title').fill('The Left Hand of Darkness (50th anniversary edition)')
    await bob.getByRole('button', { name: 'Save' }).click()
    await bob.getByRole('status').filter({ hasText: 'Saved' }).waitFor()
    expect(answers).toEqual([412, 200])
    expect((await session.t.stored('books')).find((r) => String(r.id) === id)?.name).toBe(
      'The Left Hand of Darkness (50th anniversary edition)',
    )
  })

  it('writes over their version only once it was seen: Keep my changes, then Save', async () => {
    const id = await book('The Lathe of Heaven')
    const { page } = await session.page()
    await openForm(page, id, 'The Lathe of Heaven')
    const etag = (await session.t.get(`/api/v1/books/${id}`)).headers.get('etag') ?? ''
    const renamed = await session.t.request('PATCH', `/api/v1/books/${id}`, {
      body: { data: { type: 'books', id, attributes: { name: 'The Lathe of Heaven (1971)' } } },
      headers: { 'if-match': etag },
    })
    expect(renamed.status).toBe(200)
    await page.getByLabel('Title').fill('The Lathe of Heaven: a novel')
    await page.getByRole('button', { name: 'Save' }).click()
    const alert = page.getByRole('alert').filter({ hasText: 'The Lathe of Heaven (1971)' })
    await alert.waitFor()
    await alert.getByRole('button', { name: 'Keep my changes' }).click()
    expect(await page.getByLabel('Title').inputValue()).toBe('The Lathe of Heaven: a novel')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor()
    expect((await session.t.stored('books')).find((r) => String(r.id) === id)?.name).toBe(
      'The Lathe of Heaven: a novel',
    )
  })

  it('says so when someone else changes the record of an open form, and when they delete it', async () => {
    const id = await book('The Word for World Is Forest')
    const { page, errors } = await session.page()
    await openForm(page, id, 'The Word for World Is Forest')
    await page.getByLabel('Title').fill('The Word for World is Forest')

    const renamed = await session.t.request('PATCH', `/api/v1/books/${id}`, {
      body: { data: { type: 'books', id, attributes: { name: 'The Word for World Is Forest (1972)' } } },
    })
    expect(renamed.status).toBe(200)
    const notice = page
      .getByRole('status')
      .filter({ hasText: 'This book was changed by someone else since you opened it' })
    await notice.waitFor({ timeout: 5000 })
    expect(await notice.textContent()).toContain('The Word for World Is Forest (1972)')
    expect(await page.getByLabel('Title').inputValue()).toBe('The Word for World is Forest')
    expect(await accessibilityViolations(page)).toEqual([])
    await notice.getByRole('button', { name: 'Use their version' }).click()
    expect(await page.getByLabel('Title').inputValue()).toBe('The Word for World Is Forest (1972)')

    expect((await session.t.request('DELETE', `/api/v1/books/${id}`)).status).toBe(204)
    await page
      .getByRole('status')
      .filter({ hasText: 'This book was deleted by someone else since you opened it' })
      .waitFor({ timeout: 5000 })
    expect(errors).toEqual([])
  })

  it('asks again before deleting a record changed since its page was opened (412), showing it as it is now', async () => {
    const id = await book('Always Coming Home')
    const { page } = await session.page()
    // Record pages follow the change feed, and would show the rename before the click: this page
    // is cut off from it (as when its stream has dropped), so that it still shows the old version.
    await page.route('**/api/v1/changes**', (route) => route.abort())
    await page.goto(`/app/books/${id}`)
    await page.getByRole('heading', { level: 1, name: 'Always Coming Home' }).waitFor()
    const renamed = await session.t.request('PATCH', `/api/v1/books/${id}`, {
      body: { data: { type: 'books', id, attributes: { name: 'Always Coming Home (with music)' } } },
    })
    expect(renamed.status).toBe(200)

    await page.getByRole('button', { name: 'Delete' }).click()
    await page
      .getByRole('dialog', { name: 'Delete “Always Coming Home”?' })
      .getByRole('button', { name: 'Delete' })
      .click()
    const dialog = page.getByRole('dialog', { name: 'Delete “Always Coming Home (with music)”?' })
    await dialog.getByRole('alert').filter({ hasText: 'changed by someone else since you opened it' }).waitFor()
    expect((await session.t.get(`/api/v1/books/${id}`)).status).toBe(200)
    expect(await accessibilityViolations(page)).toEqual([])

    await dialog.getByRole('button', { name: 'Delete' }).click()
    await page.getByRole('status').filter({ hasText: 'Deleted “Always Coming Home (with music)”' }).waitFor()
    expect((await session.t.get(`/api/v1/books/${id}`)).status).toBe(404)
  })
})
