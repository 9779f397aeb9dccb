import { expect, setDefaultTimeout } from 'bun:test'
import type { Page } from 'playwright-core'
import { parseTokenFile, TokenSet } from '../../src/http/access/api-tokens'
import { type AppSession, accessibilityViolations, openAppSession, sidewaysScroll } from '../support/app-browser'
import { afterAll, beforeAll, describe, it } from '../support/chromium-tests'

// A browser, a server and a database each: more than Bun's 5 s default on a busy machine.
setDefaultTimeout(60_000)

const READER = 'cat_reader-token-0123456789abcdefghijklmnopqrstuv'
const WRITER = 'cat_writer-token-0123456789abcdefghijklmnopqrstuv'
const sha256 = (token: string) => new Bun.CryptoHasher('sha256').update(token).digest('hex')
const tokenFile = `reader read ${sha256(READER)}\nwriter write ${sha256(WRITER)}\n`

/** Every control that changes the catalogue, by the names the app (and issue 35) gives them. */
const WRITE_CONTROLS = /^(New|Edit|Delete|Move to collection|Delete selected|Select )/

let session: AppSession
let publicRead: AppSession
let book: string

/** Writes the seed through the API, as the write token. */
async function create(s: AppSession, type: string, attributes: Record<string, unknown>): Promise<string> {
  const answer = await s.t.request('POST', `/api/v1/${type}`, {
    headers: { authorization: `Bearer ${WRITER}` },
    body: { data: { type, attributes } },
  })
  expect(answer.status).toBe(201)
  return answer.json.data.id
}

async function seed(s: AppSession): Promise<string> {
  const author = await create(s, 'authors', { name: 'Ursula K. Le Guin' })
  await create(s, 'books', { name: 'The Dispossessed', author_id: Number(author) })
  return create(s, 'books', { name: 'The Lathe of Heaven', author_id: Number(author) })
}

beforeAll(async () => {
  session = await openAppSession({ app: { tokens: new TokenSet(parseTokenFile(tokenFile)) } })
  publicRead = await openAppSession({ app: { tokens: new TokenSet(parseTokenFile(tokenFile)), publicRead: true } })
  book = await seed(session)
  await seed(publicRead)
})

afterAll(async () => {
  await session?.close()
  await publicRead?.close()
})

async function signIn(page: Page, token: string): Promise<void> {
  await page.getByLabel('API token').fill(token)
  await page.getByRole('button', { name: 'Sign in' }).click()
}

async function writeControls(page: Page): Promise<string[]> {
  const names: string[] = []
  for (const role of ['button', 'link', 'checkbox'] as const) {
    for (const control of await page.getByRole(role, { name: WRITE_CONTROLS }).all()) {
      names.push(((await control.getAttribute('aria-label')) ?? (await control.textContent()) ?? '').trim())
    }
  }
  return names
}

const storedToken = (page: Page) => page.evaluate('sessionStorage.getItem("catalogue-token")')

describe('the app where the service has API tokens', () => {
  it("asks for a token, and refuses a wrong one with the API's reason at the field", async () => {
    const { page } = await session.page()
    await page.goto('/app/books')
    await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor()
    await signIn(page, 'cat_not-a-token-of-this-service-0123456789abc')
    await page.getByRole('alert').filter({ hasText: 'The API token is not valid' }).waitFor()
    expect(await page.getByLabel('API token').getAttribute('aria-invalid')).toBe('true')
    expect(await storedToken(page)).toBeNull()
    expect(await accessibilityViolations(page)).toEqual([])
  })

  it('shows a read-only token the catalogue, live, and no control that writes', async () => {
    const { page } = await session.page()
    await page.goto('/app/books')
    await signIn(page, READER)
    await page.getByRole('status').filter({ hasText: '2 books' }).waitFor()
    await page.getByText('Signed in (read only)').waitFor()
    expect(await writeControls(page)).toEqual([])
    // The feed follows with the token too (read with fetch: EventSource cannot send it).
    await page.getByText('Live', { exact: true }).waitFor()
    await create(session, 'books', { name: 'Lavinia', author_id: 1 })
    await page.getByRole('link', { name: 'Lavinia' }).waitFor({ timeout: 2000 })
    await page.getByRole('link', { name: 'The Lathe of Heaven' }).click()
    await page.getByRole('heading', { level: 1, name: 'The Lathe of Heaven' }).waitFor()
    expect(await writeControls(page)).toEqual([])
    // An edit form's URL, opened anyway, says the token may only read, and shows no form.
    await page.goto(`${new URL(page.url()).pathname}/edit`)
    await page.getByRole('alert').filter({ hasText: 'This API token may only read' }).waitFor()
    expect(await page.getByRole('button', { name: 'Save' }).count()).toBe(0)
  })

  it('shows a write token the controls that write, and they work with it', async () => {
    const { page } = await session.page()
    await page.goto('/app/books?sort=name')
    await signIn(page, WRITER)
    await page.getByText('Signed in (may edit)').waitFor()
    await page.getByRole('link', { name: 'New book' }).waitFor()
    await page.getByRole('checkbox', { name: 'Select all books on this page' }).waitFor()
    await page.getByRole('checkbox', { name: 'Select Lavinia' }).check()
    await page.getByRole('button', { name: 'Delete selected' }).click()
    await page.getByRole('dialog').getByRole('button', { name: 'Delete', exact: true }).click()
    await page.getByRole('status').filter({ hasText: 'Deleted 1 book' }).waitFor()
    expect((await session.t.get('/api/v1/books', { authorization: `Bearer ${READER}` })).json.data).toHaveLength(2)
    await page.getByRole('link', { name: 'The Lathe of Heaven' }).click()
    await page.getByRole('heading', { level: 1, name: 'The Lathe of Heaven' }).waitFor()
    expect((await writeControls(page)).sort()).toEqual(['Delete', 'Edit'])
  })

  it('keeps the token through a reload of the tab, not in a new one; Sign out forgets it', async () => {
    const { page } = await session.page()
    await page.goto(`/app/books/${book}`)
    await signIn(page, READER)
    await page.getByRole('heading', { level: 1, name: 'The Lathe of Heaven' }).waitFor()
    await page.reload()
    await page.getByRole('heading', { level: 1, name: 'The Lathe of Heaven' }).waitFor()
    expect(await storedToken(page)).toBe(READER)

    const other = await session.page()
    await other.page.goto(`/app/books/${book}`)
    await other.page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor()

    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor()
    expect(await page.getByRole('heading', { name: 'The Lathe of Heaven' }).count()).toBe(0)
    expect(await storedToken(page)).toBeNull()
    await page.reload()
    await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor()
  })

  it('has no WCAG 2.1 A or AA violation on the sign-in form, and no sideways scroll at 390 px', async () => {
    const { page } = await session.page({ width: 390, height: 844 })
    await page.goto('/app/books')
    await page.getByLabel('API token').waitFor()
    expect(await accessibilityViolations(page)).toEqual([])
    await signIn(page, WRITER)
    await page.getByText('Signed in (may edit)').waitFor()
    await page.getByRole('checkbox', { name: 'Select The Dispossessed' }).check()
    expect(await accessibilityViolations(page)).toEqual([])
    expect(await sidewaysScroll(page)).toBeLessThanOrEqual(0)
  })
})

describe('the app where reads are public and writes need a token', () => {
  it('shows the catalogue without a token, no control that writes, and a Sign in for them', async () => {
    const { page } = await publicRead.page()
    await page.goto('/app/books')
    await page.getByRole('status').filter({ hasText: '2 books' }).waitFor()
    await page.getByRole('button', { name: 'Sign in' }).click()
    expect(await writeControls(page)).toEqual([])
    await page.getByRole('heading', { level: 2, name: 'Sign in' }).waitFor()
    expect(await accessibilityViolations(page)).toEqual([])
    await signIn(page, WRITER)
    await page.getByRole('checkbox', { name: 'Select The Dispossessed' }).waitFor()
    // The list stayed where it was.
    expect(await page.getByRole('status').filter({ hasText: '2 books' }).count()).toBe(1)
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByRole('status').filter({ hasText: '2 books' }).waitFor()
    expect(await writeControls(page)).toEqual([])
  })
})
