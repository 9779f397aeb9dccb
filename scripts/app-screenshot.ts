/**
 * The README's picture of the app: `bun scripts/app-screenshot.ts [docs/images/app-books.png]`.
 * Seeds a small catalogue in memory, serves it on a free port, and has Debian's Chromium
 * (CHROMIUM_PATH or /usr/bin/chromium) photograph the book list with a search typed, so that the
 * marks of its matches show.
 */
import { chromium } from 'playwright-core'
import { createApp } from '../src/http/app'
import { createLogger } from '../src/logger'
import { resources } from '../src/resources/registry'
import { SqliteStore } from '../src/store/sqlite/sqlite-store'

const output = process.argv[2] ?? 'docs/images/app-books.png'
const JSON_API = 'application/vnd.api+json'

const CATALOGUE: Record<string, Record<string, string[]>> = {
  'Ursula K. Le Guin': {
    Earthsea: ['A Wizard of Earthsea', 'The Tombs of Atuan', 'The Farthest Shore', 'Tehanu'],
    '': ['The Dispossessed', 'The Left Hand of Darkness', 'The Lathe of Heaven'],
  },
  'J.R.R. Tolkien': {
    'Middle-earth': ['The Hobbit', 'The Fellowship of the Ring', 'The Two Towers', 'The Return of the King'],
  },
  'Mervyn Peake': { Gormenghast: ['Titus Groan', 'Gormenghast', 'Titus Alone'] },
  'Susanna Clarke': { '': ['Jonathan Strange & Mr Norrell', 'Piranesi'] },
  'Italo Calvino': { '': ['Invisible Cities', 'If on a winter’s night a traveller'] },
}

const store = SqliteStore.open(':memory:', resources)
const app = createApp({ store, logger: createLogger('silent') })
const post = async (type: string, attributes: Record<string, unknown>): Promise<number> => {
  const answer = await app.handle(
    new Request(`http://localhost/api/v1/${type}`, {
      method: 'POST',
      headers: { 'content-type': JSON_API, accept: JSON_API },
      body: JSON.stringify({ data: { type, attributes } }),
    }),
  )
  if (answer.status !== 201) throw new Error(`POST ${type}: ${answer.status} ${await answer.text()}`)
  return Number(((await answer.json()) as { data: { id: string } }).data.id)
}
for (const [author, collections] of Object.entries(CATALOGUE)) {
  const authorId = await post('authors', { name: author })
  for (const [collection, titles] of Object.entries(collections)) {
    const collectionId = collection === '' ? null : await post('book_collections', { name: collection })
    for (const title of titles)
      await post('books', { name: title, author_id: authorId, book_collection_id: collectionId })
  }
}

app.listen({ port: 0, hostname: '127.0.0.1' })
const origin = `http://127.0.0.1:${app.server?.port}`
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  headless: true,
  chromiumSandbox: false,
})
try {
  const page = await browser.newPage({ viewport: { width: 1000, height: 700 }, colorScheme: 'light' })
  await page.goto(`${origin}/app/books`)
  await page.getByLabel('Search books').pressSequentially('the eart')
  await page.locator('table[aria-busy="false"]').waitFor()
  await page.getByRole('status').filter({ hasText: 'book' }).first().waitFor()
  await page.screenshot({ path: output })
  console.log(`wrote ${output}`)
} finally {
  await browser.close()
  await app.stop(true)
  await store.close()
}
