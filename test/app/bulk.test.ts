import { expect, setDefaultTimeout } from 'bun:test'
import type { Page } from 'playwright-core'
import { type AppSession, accessibilityViolations, openAppSession, sidewaysScroll } from '../support/app-browser'
import { afterAll, beforeAll, describe, it } from '../support/chromium-tests'

// A browser, a server and a database each: more than Bun's 5 s default on a busy machine.
setDefaultTimeout(60_000)

const ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'

let session: AppSession
let author: string
let earthsea: string
let hainish: string
/** Book ids by title. */
const books = new Map<string, string>()

beforeAll(async () => {
  session = await openAppSession()
  const { t } = session
  author = await t.create('authors', { name: 'Ursula K. Le Guin' })
  earthsea = await t.create('book_collections', { name: 'Earthsea' })
  hainish = await t.create('book_collections', { name: 'Hainish Cycle' })
  for (const name of [
    'A Wizard of Earthsea',
    'The Tombs of Atuan',
    'The Farthest Shore',
    'Tehanu',
    'The Dispossessed',
    'The Word for World Is Forest',
    'Lavinia',
  ]) {
    books.set(name, await t.create('books', { name, author_id: Number(author) }))
  }
})

afterAll(async () => {
  await session?.close()
})

function idOf(title: string): string {
  const id = books.get(title)
  if (!id) throw new Error(`no book ${title}`)
  return id
}

/** The collection of a book as the API has it now; undefined for a book that is no more. */
async function collectionOf(title: string): Promise<string | null | undefined> {
  const answer = await session.t.get(`/api/v1/books/${idOf(title)}`)
  if (answer.status === 404) return undefined
  expect(answer.status).toBe(200)
  return answer.json.data.relationships.book_collection.data?.id ?? null
}

/** The page, and the writes it sends to the API (method and path), counted from now. */
async function openList(path: string, width = 1200): Promise<{ page: Page; writes: string[] }> {
  const { page } = await session.page({ width, height: 800 })
  const writes: string[] = []
  page.on('request', (request) => {
    const url = new URL(request.url())
    if (request.method() !== 'GET' && url.pathname.startsWith('/api/'))
      writes.push(`${request.method()} ${url.pathname}`)
  })
  await page.goto(path)
  await page
    .getByRole('status')
    .filter({ hasText: /^\d+ books?$/ })
    .waitFor()
  return { page, writes }
}

async function select(page: Page, titles: readonly string[]): Promise<void> {
  for (const title of titles) await page.getByRole('checkbox', { name: `Select ${title}` }).check()
}

describe('many books at once', () => {
  it('moves the selected books to a collection in one atomic request', async () => {
    const { page, writes } = await openList('/app/books?sort=name')
    const three = ['A Wizard of Earthsea', 'The Tombs of Atuan', 'The Farthest Shore']
    await select(page, three)
    expect(await page.getByRole('group', { name: '3 books selected' }).isVisible()).toBe(true)
    await page.getByRole('button', { name: 'Move to collection' }).click()
    const dialog = page.getByRole('dialog', { name: 'Move 3 books to a collection' })
    await dialog.getByLabel('Collection', { exact: true }).selectOption({ label: 'Earthsea' })
    await dialog.getByRole('button', { name: 'Move' }).click()
    await page.getByRole('status').filter({ hasText: 'Moved 3 books to Earthsea' }).waitFor()
    expect(await dialog.count()).toBe(0)
    // Focus goes to what was done (the buttons it was on are gone with the selection).
    await page.waitForFunction('document.activeElement?.textContent === "Moved 3 books to Earthsea"')
    expect(writes).toEqual(['POST /api/v1/operations'])
    for (const title of three) expect(await collectionOf(title)).toBe(earthsea)
    expect(await collectionOf('Tehanu')).toBeNull()
    // Done: nothing stays selected.
    expect(await page.getByRole('checkbox', { checked: true }).count()).toBe(0)
  })

  it('selects the whole page, and moves it out of any collection, found by searching collections', async () => {
    await session.t.request('PATCH', `/api/v1/books/${idOf('Tehanu')}`, {
      body: { data: { type: 'books', id: idOf('Tehanu'), attributes: { book_collection_id: Number(hainish) } } },
    })
    const { page, writes } = await openList(`/app/books?collection=${earthsea}`)
    await page.getByRole('status').filter({ hasText: '3 books' }).waitFor()
    await page.getByRole('checkbox', { name: 'Select all books on this page' }).check()
    expect(await page.getByRole('checkbox', { checked: true }).count()).toBe(4)
    await page.getByRole('button', { name: 'Move to collection' }).click()
    const dialog = page.getByRole('dialog', { name: 'Move 3 books to a collection' })
    // Searching narrows the collections offered; `No collection` is always there.
    await dialog.getByLabel('Find a collection').fill('hainish')
    await dialog.getByText('1 collection matches').waitFor()
    const options = await dialog.getByLabel('Collection', { exact: true }).locator('option').allTextContents()
    expect(options).toEqual(['Choose a collection', 'No collection', 'Hainish Cycle'])
    await dialog.getByLabel('Collection', { exact: true }).selectOption({ label: 'No collection' })
    await dialog.getByRole('button', { name: 'Move' }).click()
    await page.getByRole('status').filter({ hasText: 'Moved 3 books out of their collections' }).waitFor()
    expect(writes).toEqual(['POST /api/v1/operations'])
    for (const title of ['A Wizard of Earthsea', 'The Tombs of Atuan', 'The Farthest Shore']) {
      expect(await collectionOf(title)).toBeNull()
    }
    expect(await collectionOf('Tehanu')).toBe(hainish)
    // The list follows: no book is left in Earthsea.
    await page.getByRole('status').filter({ hasText: 'No books yet' }).waitFor()
  })

  it('deletes the selected books in one request, after asking in a dialog', async () => {
    const extra = ['Malafrena', 'Orsinian Tales']
    for (const name of extra) books.set(name, await session.t.create('books', { name, author_id: Number(author) }))
    const { page, writes } = await openList('/app/books?sort=name')
    await select(page, extra)
    await page.getByRole('button', { name: 'Delete selected' }).click()
    const dialog = page.getByRole('dialog', { name: 'Delete 2 books?' })
    expect(await dialog.getByRole('listitem').allTextContents()).toEqual(extra)
    // Cancel asks nothing of the API.
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    expect(await dialog.count()).toBe(0)
    expect(writes).toEqual([])
    await page.getByRole('button', { name: 'Delete selected' }).click()
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click()
    await page.getByRole('status').filter({ hasText: 'Deleted 2 books' }).waitFor()
    expect(writes).toEqual(['POST /api/v1/operations'])
    for (const title of extra) expect(await collectionOf(title)).toBeUndefined()
    await page.getByRole('link', { name: 'Malafrena' }).waitFor({ state: 'detached' })
  })

  it("changes nothing when the service refuses the batch, and shows the API's error", async () => {
    const doomed = ['Lavinia', 'The Word for World Is Forest']
    const { page, writes } = await openList('/app/books?sort=name')
    await select(page, doomed)
    await page.getByRole('button', { name: 'Delete selected' }).click()
    const dialog = page.getByRole('dialog', { name: 'Delete 2 books?' })
    await dialog.waitFor()
    // Someone else deletes one of them while the dialog is open.
    const gone = idOf('The Word for World Is Forest')
    expect((await session.t.request('DELETE', `/api/v1/books/${gone}`)).status).toBe(204)
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click()
    const alert = page.getByRole('alert').filter({ hasText: 'Nothing was deleted' })
    await alert.waitFor()
    expect(writes).toEqual(['POST /api/v1/operations'])
    // All or nothing: Lavinia is still there.
    expect(await collectionOf('Lavinia')).toBeNull()
    // The alert gives the API's own detail: the same batch, sent again, is refused with it.
    const again = await session.t.request('POST', '/api/v1/operations', {
      headers: { 'content-type': ATOMIC, accept: ATOMIC },
      body: {
        'atomic:operations': [
          { op: 'remove', ref: { type: 'books', id: idOf('Lavinia') } },
          { op: 'remove', ref: { type: 'books', id: gone } },
        ],
      },
    })
    expect(again.status).toBe(404)
    // The operation it names is named by the book's title too.
    expect(again.json.errors[0].source.pointer).toStartWith('/atomic:operations/1')
    expect(await alert.textContent()).toBe(
      `Nothing was deleted. The Word for World Is Forest: ${again.json.errors[0].detail}`,
    )
    expect(await collectionOf('Lavinia')).toBeNull()
  })

  it('refuses a move to a collection deleted meanwhile, moving nothing', async () => {
    const doomed = await session.t.create('book_collections', { name: 'Short Stories' })
    const { page } = await openList('/app/books?sort=name')
    await select(page, ['Lavinia', 'Tehanu'])
    await page.getByRole('button', { name: 'Move to collection' }).click()
    const dialog = page.getByRole('dialog', { name: 'Move 2 books to a collection' })
    await dialog.getByLabel('Collection', { exact: true }).selectOption({ label: 'Short Stories' })
    expect((await session.t.request('DELETE', `/api/v1/book_collections/${doomed}`)).status).toBe(204)
    await dialog.getByRole('button', { name: 'Move' }).click()
    const alert = page.getByRole('alert').filter({ hasText: 'Nothing was moved' })
    await alert.waitFor()
    expect(await alert.textContent()).toBe('Nothing was moved. Lavinia: Book collection must exist')
    expect(await collectionOf('Lavinia')).toBeNull()
    expect(await collectionOf('Tehanu')).toBe(hainish)
  })

  it('has no WCAG 2.1 A or AA violation with rows selected and in its dialogs, and no sideways scroll at 390 px', async () => {
    const { page } = await openList('/app/books?sort=name', 390)
    const sideways = async () => {
      expect(await sidewaysScroll(page)).toBeLessThanOrEqual(0)
    }
    await select(page, ['Lavinia', 'Tehanu'])
    expect(await accessibilityViolations(page)).toEqual([])
    await sideways()
    await page.getByRole('button', { name: 'Move to collection' }).click()
    await page.getByRole('dialog').getByText('Reading collections…').waitFor({ state: 'detached' })
    expect(await accessibilityViolations(page)).toEqual([])
    await sideways()
    await page.keyboard.press('Escape')
    await page.getByRole('dialog').waitFor({ state: 'detached' })
    await page.getByRole('button', { name: 'Delete selected' }).click()
    await page.getByRole('dialog', { name: 'Delete 2 books?' }).waitFor()
    // The dialog opens on Cancel: deleting takes a choice.
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Cancel')
    expect(await accessibilityViolations(page)).toEqual([])
    await sideways()
  })
})
