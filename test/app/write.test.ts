import { expect, setDefaultTimeout } from 'bun:test'
import type { Locator, Page } from 'playwright-core'
import { parseTokenFile, TokenSet } from '../../src/http/access/api-tokens'
import { type AppSession, accessibilityViolations, openAppSession, sidewaysScroll } from '../support/app-browser'
import { afterAll, beforeAll, describe, it } from '../support/chromium-tests'

// A browser, a server and a database each: more than Bun's 5 s default on a busy machine.
setDefaultTimeout(60_000)

let session: AppSession
const ids: Record<string, string> = {}

beforeAll(async () => {
  session = await openAppSession()
  const { t } = session
  ids.leGuin = await t.create('authors', { name: 'Ursula K. Le Guin' })
  ids.tolkien = await t.create('authors', { name: 'J.R.R. Tolkien' })
  ids.pratchett = await t.create('authors', { name: 'Terry Pratchett' })
  ids.earthsea = await t.create('book_collections', { name: 'Earthsea' })
  ids.discworld = await t.create('book_collections', { name: 'Discworld' })
  ids.hobbit = await t.create('books', { name: 'The Hobbit', author_id: Number(ids.tolkien) })
  ids.mort = await t.create('books', {
    name: 'Mort',
    author_id: Number(ids.pratchett),
    book_collection_id: Number(ids.discworld),
  })
})

afterAll(async () => {
  await session?.close()
})

/** The record as stored, its id left out. */
async function stored(type: string, id: string) {
  const row = (await session.t.stored(type)).find((r) => String(r.id) === id)
  if (!row) throw new Error(`no ${type} ${id}`)
  const { id: _, ...fields } = row
  return fields
}

/** The text of the elements a field's aria-describedby names. */
async function description(page: Page, input: Locator): Promise<string> {
  const ids = (await input.getAttribute('aria-describedby')) ?? ''
  const texts = await Promise.all(ids.split(' ').map((id) => page.locator(`[id="${id}"]`).textContent()))
  return texts.join(' ')
}

/** Whether the focus is on the element or inside it. */
function hasFocus(element: Locator): Promise<boolean> {
  return element.evaluate((e) => e.contains(e.ownerDocument.activeElement))
}

describe('writing in the app', () => {
  it('creates a book, its author and collection found by typing part of their names, by pointer and by keyboard', async () => {
    const { page, errors } = await session.page()
    await page.goto('/app/books')
    await page.getByRole('link', { name: 'New book' }).click()
    await page.getByRole('heading', { level: 1, name: 'New book' }).waitFor()
    expect(new URL(page.url()).pathname).toBe('/app/books/new')
    await page.getByLabel('Title').fill('The Farthest Shore')

    // The author: part of the name, then the option clicked. Each keystroke asks the API.
    const searched: string[] = []
    page.on('request', (request) => {
      const url = new URL(request.url())
      if (url.pathname === '/api/v1/authors') searched.push(url.searchParams.get('filter[search]') ?? '')
    })
    const author = page.getByRole('combobox', { name: 'Author' })
    await author.pressSequentially('guin')
    expect(await author.getAttribute('aria-expanded')).toBe('true')
    const listbox = page.locator(`[id="${await author.getAttribute('aria-controls')}"]`)
    await listbox.getByRole('option', { name: 'Ursula K. Le Guin' }).click()
    expect(searched).toEqual(['g', 'gu', 'gui', 'guin'])
    expect(await author.inputValue()).toBe('Ursula K. Le Guin')
    expect(await author.getAttribute('aria-expanded')).toBe('false')

    // The collection: by keyboard alone.
    const collection = page.getByRole('combobox', { name: 'Collection' })
    await collection.focus()
    await collection.pressSequentially('eart')
    await page.getByRole('option', { name: 'Earthsea' }).waitFor()
    await collection.press('ArrowDown')
    const active = await collection.getAttribute('aria-activedescendant')
    expect(await page.locator(`[id="${active}"]`).textContent()).toBe('Earthsea')
    expect(await page.getByRole('option', { name: 'Earthsea' }).getAttribute('aria-selected')).toBe('true')
    await collection.press('Enter')
    expect(await collection.inputValue()).toBe('Earthsea')
    expect(await collection.getAttribute('aria-expanded')).toBe('false')
    expect(new URL(page.url()).pathname).toBe('/app/books/new') // Enter picked; it did not send the form

    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('heading', { level: 1, name: 'The Farthest Shore' }).waitFor()
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor()
    const id = new URL(page.url()).pathname.split('/').pop() ?? ''
    expect(await page.getByRole('link', { name: 'Ursula K. Le Guin' }).count()).toBe(1)
    expect(await page.getByRole('link', { name: 'Earthsea' }).count()).toBe(1)
    expect(await stored('books', id)).toEqual({
      name: 'The Farthest Shore',
      author_id: Number(ids.leGuin),
      book_collection_id: Number(ids.earthsea),
    })
    expect(errors).toEqual([])
  })

  it('cancels the search before when the next keystroke comes, and shows the last one', async () => {
    const { page, errors } = await session.page()
    // A slow service: each search waits a while, so the next keystroke comes before its answer.
    await page.route('**/api/v1/book_collections?*', async (route) => {
      await Bun.sleep(1000)
      await route.continue().catch(() => {})
    })
    const cancelled: string[] = []
    page.on('requestfailed', (request) => {
      const url = new URL(request.url())
      if (url.pathname === '/api/v1/book_collections') cancelled.push(url.searchParams.get('filter[search]') ?? '')
    })
    await page.goto('/app/books/new')
    await page.getByRole('combobox', { name: 'Collection' }).pressSequentially('disc')
    await page.getByRole('option', { name: 'Discworld' }).waitFor()
    expect(cancelled).toEqual(['d', 'di', 'dis'])
    expect(errors).toEqual([])
  })

  it('takes the one option a typed text narrowed the list to, on Tab or on Enter', async () => {
    const { page } = await session.page()
    await page.goto(`/app/books/${ids.hobbit}/edit`)
    await page.getByRole('heading', { level: 1, name: 'Edit “The Hobbit”' }).waitFor()
    const author = page.getByRole('combobox', { name: 'Author' })
    await author.fill('')
    await author.pressSequentially('pratchett')
    await page.getByRole('option', { name: 'Terry Pratchett' }).waitFor()
    await author.press('Tab')
    expect(await author.inputValue()).toBe('Terry Pratchett')
    const collection = page.getByRole('combobox', { name: 'Collection' })
    await collection.focus()
    await collection.pressSequentially('discw')
    await page.getByRole('option', { name: 'Discworld' }).waitFor()
    await collection.press('Enter')
    expect(await collection.inputValue()).toBe('Discworld')
    expect(new URL(page.url()).pathname).toBe(`/app/books/${ids.hobbit}/edit`)
  })

  it('closes the options on Escape, then puts back the chosen name; a reload keeps the form open', async () => {
    const { page } = await session.page()
    await page.goto(`/app/books/${ids.hobbit}/edit`)
    const author = page.getByRole('combobox', { name: 'Author' })
    await page.reload()
    await page.getByRole('heading', { level: 1, name: 'Edit “The Hobbit”' }).waitFor()
    expect(await author.inputValue()).toBe('J.R.R. Tolkien')
    await author.fill('')
    await author.pressSequentially('pratch')
    await page.getByRole('option', { name: 'Terry Pratchett' }).waitFor()
    await author.press('Escape')
    expect(await author.getAttribute('aria-expanded')).toBe('false')
    expect(await author.inputValue()).toBe('pratch')
    await author.press('Escape')
    expect(await author.inputValue()).toBe('J.R.R. Tolkien')
  })

  it('edits a title, and clears a collection, each save sending the ETag the form was opened with', async () => {
    const { page } = await session.page()
    const sent: (string | null)[] = []
    page.on('request', (request) => {
      if (request.method() === 'PATCH') sent.push(request.headers()['if-match'] ?? null)
    })
    const tag = (await session.t.get(`/api/v1/books/${ids.mort}`)).headers.get('etag')
    await page.goto(`/app/books/${ids.mort}`)
    await page.getByRole('link', { name: 'Edit' }).click()
    expect(new URL(page.url()).pathname).toBe(`/app/books/${ids.mort}/edit`)
    const title = page.getByLabel('Title')
    expect(await title.inputValue()).toBe('Mort')
    await title.fill('Mort (a Discworld novel)')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor()
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Mort (a Discworld novel)')
    expect(sent).toEqual([tag])

    // Emptied, the collection is none: the book belongs to no collection.
    await page.getByRole('link', { name: 'Edit' }).click()
    const collection = page.getByRole('combobox', { name: 'Collection' })
    await page.getByRole('heading', { level: 1, name: 'Edit “Mort (a Discworld novel)”' }).waitFor()
    expect(await collection.inputValue()).toBe('Discworld')
    await collection.fill('')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor()
    expect(await stored('books', ids.mort ?? '')).toEqual({
      name: 'Mort (a Discworld novel)',
      author_id: Number(ids.pratchett),
      book_collection_id: null,
    })
    expect(sent).toHaveLength(2)
    expect(sent[1]).not.toBe(tag)
    expect(sent[1]).toMatch(/^"/)

    // And the Clear button does the same for a book in a collection.
    const book = await session.t.create('books', {
      name: 'Tehanu',
      author_id: Number(ids.leGuin),
      book_collection_id: Number(ids.earthsea),
    })
    await page.goto(`/app/books/${book}/edit`)
    await page.getByRole('button', { name: 'Clear collection' }).click()
    expect(await collection.inputValue()).toBe('')
    expect(await hasFocus(collection)).toBe(true)
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor()
    expect((await stored('books', book)).book_collection_id).toBeNull()
  })

  it('leaves no form in the history: Back after a save or a Cancel goes where the form was opened from', async () => {
    const { page, errors } = await session.page()
    const book = await session.t.create('books', { name: 'The Other Wind', author_id: Number(ids.tolkien) })
    const path = () => new URL(page.url()).pathname
    const atHeading = (name: string) => page.getByRole('heading', { level: 1, name, exact: true }).waitFor()

    // Edit, opened from the record's page, then saved: the record's page, and Back leaves it.
    await page.goto(`/app/authors/${ids.tolkien}`)
    await page.getByRole('link', { name: 'The Other Wind' }).click()
    await atHeading('The Other Wind')
    await page.getByRole('link', { name: 'Edit' }).click()
    await page.getByLabel('Title').fill('The Other Wind (Earthsea)')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor()
    await atHeading('The Other Wind (Earthsea)')
    expect(path()).toBe(`/app/books/${book}`)
    await page.goBack()
    await atHeading('J.R.R. Tolkien')
    expect(path()).toBe(`/app/authors/${ids.tolkien}`)

    // Edit, then Cancel: the same.
    await page.goForward()
    await atHeading('The Other Wind (Earthsea)')
    await page.getByRole('link', { name: 'Edit' }).click()
    await page.getByRole('button', { name: 'Cancel' }).click()
    await atHeading('The Other Wind (Earthsea)')
    await page.goBack()
    await atHeading('J.R.R. Tolkien')

    // New, opened from a searched list, then cancelled: the list with its search.
    await page.goto('/app/books?q=wind')
    await page.getByRole('link', { name: 'New book' }).click()
    await atHeading('New book')
    await page.getByRole('button', { name: 'Cancel' }).click()
    await atHeading('Books')
    expect(new URL(page.url()).searchParams.get('q')).toBe('wind')

    // Edit opened by its URL, then saved: the record's page in its place, and Back is the page before.
    await page.goto(`/app/books/${book}/edit`)
    await page.getByLabel('Title').fill('The Other Wind')
    await page.getByRole('button', { name: 'Save' }).click()
    await atHeading('The Other Wind')
    await page.goBack()
    await atHeading('Books')
    expect(new URL(page.url()).searchParams.get('q')).toBe('wind')

    // New, opened from the list, then saved: the new record's page, and Back is the list.
    await page.goto('/app/books')
    await page.getByRole('link', { name: 'New book' }).click()
    await page.getByLabel('Title').fill('Tales from Earthsea')
    const author = page.getByRole('combobox', { name: 'Author' })
    await author.pressSequentially('guin')
    await page.getByRole('option', { name: 'Ursula K. Le Guin' }).click()
    await page.getByRole('button', { name: 'Save' }).click()
    await atHeading('Tales from Earthsea')
    expect(path()).toMatch(/^\/app\/books\/\d+$/)
    await page.goBack()
    await atHeading('Books')
    expect(path()).toBe('/app/books')
    expect(errors).toEqual([])
  })

  it("refuses a blank title and a missing author with the API's own messages, each by its field", async () => {
    const { page } = await session.page({ width: 390, height: 844 })
    await page.goto('/app/books/new')
    await page.getByLabel('Title').fill('   ')
    await page.getByRole('button', { name: 'Save' }).click()
    const title = page.getByLabel('Title')
    await page.locator('[aria-invalid="true"]').first().waitFor()
    expect(await title.getAttribute('aria-invalid')).toBe('true')
    expect(await description(page, title)).toBe("Name can't be blank")
    const author = page.getByRole('combobox', { name: 'Author' })
    expect(await author.getAttribute('aria-invalid')).toBe('true')
    expect(await description(page, author)).toBe('Author must exist')
    expect(await page.getByRole('combobox', { name: 'Collection' }).getAttribute('aria-invalid')).toBeNull()
    // The first field refused has the focus, its message read with it.
    expect(await hasFocus(title)).toBe(true)
    expect(new URL(page.url()).pathname).toBe('/app/books/new')
    expect(await accessibilityViolations(page)).toEqual([])
    expect(await sidewaysScroll(page)).toBeLessThanOrEqual(0)

    // The options open at a phone's width without a sideways scroll either.
    await author.pressSequentially('t')
    await page.getByRole('option').first().waitFor()
    expect(await accessibilityViolations(page)).toEqual([])
    expect(await sidewaysScroll(page)).toBeLessThanOrEqual(0)
  })

  it('creates an author and a collection, each with a Name', async () => {
    const { page } = await session.page()
    await page.goto('/app/authors')
    await page.getByRole('link', { name: 'New author' }).click()
    await page.getByLabel('Name').fill('Mary Shelley')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('heading', { level: 1, name: 'Mary Shelley' }).waitFor()
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor()

    await page.goto('/app/collections')
    await page.getByRole('link', { name: 'New collection' }).click()
    await page.getByLabel('Name').fill('Gothic')
    await page.getByRole('button', { name: 'Cancel' }).click()
    await page.getByRole('heading', { level: 1, name: 'Collections' }).waitFor()
    expect((await session.t.stored('book_collections')).map((r) => r.name)).not.toContain('Gothic')
  })

  it('deletes a book after asking in a dialog, which Escape closes, the focus back on Delete', async () => {
    const { page } = await session.page({ width: 390, height: 844 })
    const book = await session.t.create('books', { name: 'The Silmarillion', author_id: Number(ids.tolkien) })
    await page.goto(`/app/books/${book}`)
    await page.getByRole('heading', { level: 1, name: 'The Silmarillion' }).waitFor()
    const opener = page.getByRole('button', { name: 'Delete' })
    await opener.click()
    const dialog = page.getByRole('dialog', { name: 'Delete “The Silmarillion”?' })
    await dialog.waitFor()
    expect(await hasFocus(dialog)).toBe(true)
    expect(await accessibilityViolations(page)).toEqual([])
    expect(await sidewaysScroll(page)).toBeLessThanOrEqual(0)
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'hidden' })
    expect(await hasFocus(opener)).toBe(true)
    expect((await session.t.get(`/api/v1/books/${book}`)).status).toBe(200)

    await opener.click()
    await dialog.getByRole('button', { name: 'Delete' }).click()
    await page.getByRole('heading', { level: 1, name: 'Books' }).waitFor()
    await page.getByRole('status').filter({ hasText: 'Deleted “The Silmarillion”' }).waitFor()
    expect((await session.t.get(`/api/v1/books/${book}`)).status).toBe(404)
  })

  it("shows the API's refusal to delete an author who still has books (409)", async () => {
    const { page } = await session.page()
    const refusal = await session.t.request('DELETE', `/api/v1/authors/${ids.tolkien}`)
    expect(refusal.status).toBe(409)
    const detail = refusal.json.errors[0].detail as string
    expect(detail).toContain('still has')
    await page.goto(`/app/authors/${ids.tolkien}`)
    await page.getByRole('button', { name: 'Delete' }).click()
    const dialog = page.getByRole('dialog', { name: 'Delete “J.R.R. Tolkien”?' })
    await dialog.getByRole('button', { name: 'Delete' }).click()
    await dialog.getByRole('alert').filter({ hasText: detail }).waitFor()
    expect(await accessibilityViolations(page)).toEqual([])
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    await dialog.waitFor({ state: 'hidden' })
    expect((await session.t.get(`/api/v1/authors/${ids.tolkien}`)).status).toBe(200)
  })

  it('shows a refusal about no field in an alert: a write without a token where reads are public (401)', async () => {
    const writer = new Bun.CryptoHasher('sha256').update('cat_writer-token-0123456789abcdefghijklmnopqrstuv')
    const guarded = await openAppSession({
      app: { tokens: new TokenSet(parseTokenFile(`writer write ${writer.digest('hex')}\n`)), publicRead: true },
    })
    try {
      const refusal = await guarded.t.request('POST', '/api/v1/authors', {
        body: { data: { type: 'authors', attributes: { name: 'Mary Shelley' } } },
      })
      expect(refusal.status).toBe(401)
      const { page } = await guarded.page()
      await page.goto('/app/authors/new')
      await page.getByLabel('Name').fill('Mary Shelley')
      await page.getByRole('button', { name: 'Save' }).click()
      await page.getByRole('alert').filter({ hasText: refusal.json.errors[0].detail }).waitFor()
      expect(await page.getByLabel('Name').getAttribute('aria-invalid')).toBeNull()
      expect(await page.getByLabel('Name').inputValue()).toBe('Mary Shelley')
      expect(await accessibilityViolations(page)).toEqual([])
    } finally {
      await guarded.close()
    }
  })
})
