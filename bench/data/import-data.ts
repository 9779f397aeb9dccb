/**
 * Writes a CSV file for `catalogue import` to measure with: `bun bench/data/import-data.ts big.csv
 * [books]` (100,000 books by default), 1000 authors, 50 collections, every fifth book in none (so
 * 40 collections are named), and a few names that need quotes (commas, quotes) or are not ASCII.
 * bench/parts/million/data.ts writes its data sets with `writeBooksCsv` and re-makes them when this
 * file changes.
 */
const quote = (name: string) => (/[",\r\n]/.test(name) ? `"${name.replaceAll('"', '""')}"` : name)

export async function writeBooksCsv(path: string, books: number): Promise<void> {
  const writer = Bun.file(path).writer()
  writer.write('title,author,collection\n')
  for (let n = 1; n <= books; n++) {
    const title = n % 97 === 0 ? `Book ${n}, "annotated"` : n % 89 === 0 ? `Livre n°${n} — édition` : `Book ${n}`
    const author = `Author ${n % 1000}${n % 1000 === 7 ? ', Jr.' : ''}`
    const collection = n % 5 === 0 ? '' : `Collection ${n % 50}`
    writer.write(`${quote(title)},${quote(author)},${quote(collection)}\n`)
  }
  await writer.end()
}

if (import.meta.main) {
  const [path = 'big.csv', count = '100000'] = Bun.argv.slice(2)
  await writeBooksCsv(path, Number(count))
  console.error(`wrote ${count} books to ${path}`)
}
