import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { openTestApp, type TestApp } from '../support/harness'

type Listed = { id: string; attributes: { name: string } }

describe('GET /api/v1/books?filter[search]= forgives typos', () => {
  let t: TestApp
  type Key = 'bridge' | 'brigden' | 'annas' | 'gormenghast' | 'midnight' | 'labyrinth' | 'keep' | 'year'
  const id = {} as Record<Key, number>
  beforeAll(async () => {
    t = await openTestApp()
    const plain = await t.create('authors', { name: 'Plain Writer' })
    const peake = await t.create('authors', { name: 'Mervyn Peake' })
    const anna = await t.create('authors', { name: 'Anna Brigde' })
    const series = await t.create('book_collections', { name: 'Castle Chronicles' })
    const book = async (key: Key, name: string, author = plain, collection?: string) => {
      id[key] = Number(await t.create('books', { name, author_id: author, book_collection_id: collection ?? null }))
    }
    // Created in an order the ranking must undo.
    await book('bridge', 'The Bridge of Sighs')
    await book('brigden', 'Brigden Hall')
    await book('annas', 'Quiet Water', anna)
    await book('gormenghast', 'Gormenghast', peake)
    await book('midnight', 'Midnight Garden')
    await book('labyrinth', 'Scarlet Labyrinth')
    await book('keep', 'The Keep', plain, series)
    await book('year', 'Summer 19846')
  })
  afterAll(() => t.close())

  const search = async (text: string, extra = ''): Promise<number[]> => {
    const answer = await t.get(`/api/v1/books?filter[search]=${encodeURIComponent(text)}${extra}`)
    expect(answer.status).toBe(200)
    return answer.json.data.map((r: Listed) => Number(r.id))
  }

  it('finds a word of 5 to 8 letters one edit off: a swap, a change, a letter left out or added', async () => {
    expect(await search('brigde')).toContain(id.bridge)
    expect(await search('bridgr')).toContain(id.bridge)
    expect(await search('brdge')).toContain(id.bridge)
    expect(await search('briidge')).toContain(id.bridge)
    expect(await search('midnihgt')).toEqual([id.midnight])
  })

  it('forgives two edits from 9 letters, and only one below', async () => {
    expect(await search('gromenhgast')).toEqual([id.gormenghast])
    expect(await search('labyirnht')).toEqual([id.labyrinth])
    expect(await search('mdinihgt')).toEqual([])
  })

  it('takes a word under 5 letters, a wrong first letter, or a number as written', async () => {
    expect(await search('brdg')).toEqual([])
    expect(await search('nridge')).toEqual([])
    expect(await search('19845')).toEqual([])
    expect(await search('19846')).toEqual([id.year])
  })

  it('forgives typos in an author’s and a collection’s name', async () => {
    expect(await search('paeke')).toEqual([id.gormenghast])
    expect(await search('chronicels')).toEqual([id.keep])
  })

  it('ranks fewer typos first, before the weight of the field: an exact author before a forgiven title', async () => {
    // brigde: Brigden Hall's title as a prefix and Anna Brigde's book by its author, unforgiven;
    // The Bridge of Sighs only forgiven, though its title weighs most and its id is the lowest.
    expect(await search('brigde')).toEqual([id.brigden, id.annas, id.bridge])
  })

  it('narrows word by word, a forgiven word beside an exact prefix', async () => {
    expect(await search('scarlet labyrnith')).toEqual([id.labyrinth])
    expect(await search('scarlet labyrnith midnight')).toEqual([])
    // brig must still match as written beside a longer word that may be forgiven: The Bridge has no brig.
    expect(await search('brigde brig')).toEqual([id.annas, id.brigden])
    expect(await search('brigde b')).toEqual([id.annas, id.bridge, id.brigden])
  })

  it('takes the words before the last as whole words, each forgiven its typos', async () => {
    // A finished word is a whole word: Brigden is one edit from brigde, not brigde as written.
    expect(await search('brigde hall')).toEqual([id.brigden])
    expect(await search('hall brigde')).toEqual([id.brigden])
    expect(await search('brig hall')).toEqual([])
    expect(await search('scar labyrinth')).toEqual([])
    expect(await search('scarlet lab')).toEqual([id.labyrinth])
  })

  it('forgives the same in every order and page kind: sorted, by id, and by cursor', async () => {
    const expected = [id.bridge, id.brigden, id.annas].map(Number)
    const names = ['Brigden Hall', 'Quiet Water', 'The Bridge of Sighs']
    const sorted = await t.get('/api/v1/books?filter[search]=brigde&sort=name')
    expect(sorted.json.data.map((r: Listed) => r.attributes.name)).toEqual(names)
    expect(await search('brigde', '&sort=id')).toEqual(expected.sort((a, b) => a - b))
    const first = await t.get('/api/v1/books?filter[search]=brigde&page[size]=2&page[after]=')
    const next = await t.get(first.json.links.next.replace(/^https?:\/\/[^/]+/, ''))
    expect([...first.json.data, ...next.json.data].map((r: Listed) => Number(r.id))).toEqual(expected)
    const counted = await t.get('/api/v1/books?filter[search]=brigde&page[number]=1&page[size]=2')
    expect(counted.json.meta.total).toBe(3)
  })

  it('finds a word by its typo from the next search after the write that brings it, and after a rename', async () => {
    const author = await t.create('authors', { name: 'Newly Added' })
    const created = Number(await t.create('books', { name: 'Quixotic Voyage', author_id: author }))
    expect(await search('quixotci')).toEqual([created])
    const renamed = await t.request('PATCH', `/api/v1/books/${created}`, {
      body: { data: { type: 'books', id: String(created), attributes: { name: 'Zephyrine Voyage' } } },
    })
    expect(renamed.status).toBe(200)
    expect(await search('zephyrnie')).toEqual([created])
    expect(await search('quixotci')).toEqual([])
    // A rename of the author brings its words too; an update that gives the title as it was keeps it found.
    const author2 = await t.request('PATCH', `/api/v1/authors/${author}`, {
      body: { data: { type: 'authors', id: String(author), attributes: { name: 'Hildegarde Ottoline' } } },
    })
    expect(author2.status).toBe(200)
    expect(await search('hildegrade')).toEqual([created])
    const same = await t.request('PATCH', `/api/v1/books/${created}`, {
      body: { data: { type: 'books', id: String(created), attributes: { name: 'Zephyrine Voyage' } } },
    })
    expect(same.status).toBe(200)
    expect(await search('zephyrnie voyaeg')).toEqual([created])
  })
})

describe('GET /api/v1/books?filter[search]=&filter[author]= by cursor', () => {
  it('keeps to the author on every cursor page, as on numbered pages', async () => {
    const t = await openTestApp()
    try {
      const one = await t.create('authors', { name: 'First Writer' })
      const two = await t.create('authors', { name: 'Second Writer' })
      const mine: number[] = []
      for (let i = 0; i < 6; i++) {
        mine.push(Number(await t.create('books', { name: `Harbour Tale ${i}`, author_id: one })))
        await t.create('books', { name: `Harbour Song ${i}`, author_id: two })
      }
      const seen: number[] = []
      let next: string | undefined =
        `/api/v1/books?filter[search]=harbour&filter[author]=${one}&page[size]=4&page[after]=`
      while (next) {
        const page = await t.get(next)
        expect(page.status).toBe(200)
        seen.push(...page.json.data.map((r: Listed) => Number(r.id)))
        next = page.json.links.next?.replace(/^https?:\/\/[^/]+/, '')
      }
      expect(seen).toEqual(mine)
    } finally {
      await t.close()
    }
  })
})
