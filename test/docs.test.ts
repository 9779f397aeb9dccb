import { describe, expect, it } from 'bun:test'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { helpText } from '../src/config'
import { configurationTable, readmeTable, settingsTableIn } from '../src/config/markdown'

/*
 * The README is a short front page and docs/ holds the depth: every link between them leads
 * somewhere, and every setting the service takes is explained in docs/configuration.md.
 */

const REPO = join(import.meta.dir, '..')
const DOCS = join(REPO, 'docs')

function markdownFiles(): string[] {
  const files = [join(REPO, 'README.md')]
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.md')) files.push(path)
    }
  }
  walk(DOCS)
  return files
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N} -]/gu, '')
    .replace(/ /g, '-')
}

function anchorsIn(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '')
  return new Set([...text.matchAll(/^#+ (.+)$/gm)].map((m) => anchorOf(m[1] as string)))
}

/** The relative links of a markdown file (outside code), as [text](target). */
function relativeLinks(file: string): string[] {
  const text = readFileSync(file, 'utf8')
    .replace(/```[\s\S]*?```/g, '')
    .replace(/`[^`\n]*`/g, '')
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] as string).filter((target) => !/^[a-z]+:/.test(target))
}

describe('the documentation', () => {
  it('links only to files and headings that exist', () => {
    const broken: string[] = []
    for (const file of markdownFiles()) {
      for (const link of relativeLinks(file)) {
        const [path, anchor] = link.split('#') as [string, string | undefined]
        const target = path === '' ? file : resolve(dirname(file), path)
        if (!existsSync(target)) broken.push(`${file.slice(REPO.length + 1)}: ${link}`)
        else if (anchor && target.endsWith('.md') && !anchorsIn(target).has(anchor))
          broken.push(`${file.slice(REPO.length + 1)}: ${link} (no such heading)`)
      }
    }
    expect(broken).toEqual([])
  })

  it('keeps the README a short front page, under 250 lines', () => {
    const lines = readFileSync(join(REPO, 'README.md'), 'utf8').split('\n').length
    expect(lines).toBeLessThan(250)
  })

  it('explains every setting of the service in docs/configuration.md', () => {
    const variables = [...helpText.matchAll(/^ {2}--[a-z-]+ .*? {2,}([A-Z_]+) /gm)].map((m) => m[1] as string)
    expect(variables.length).toBeGreaterThan(10)
    const configuration = readFileSync(join(DOCS, 'configuration.md'), 'utf8')
    expect(variables.filter((name) => !configuration.includes(`| \`${name}\``))).toEqual([])
  })

  it('holds in docs/configuration.md the settings table src/config/ writes (bun scripts/write-settings-tables.ts)', () => {
    const configuration = readFileSync(join(DOCS, 'configuration.md'), 'utf8')
    expect(settingsTableIn(configuration)).toBe(configurationTable())
  })

  it('holds in the README the short settings table src/config/ writes (bun scripts/write-settings-tables.ts --readme)', () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8')
    expect(settingsTableIn(readme)).toBe(readmeTable())
  })

  it('lists every document of docs/ in its index', () => {
    const index = readFileSync(join(DOCS, 'README.md'), 'utf8')
    const documents = markdownFiles()
      .filter((file) => file.startsWith(DOCS) && !file.endsWith(`docs${'/'}README.md`))
      .map((file) => file.slice(DOCS.length + 1))
    expect(documents.filter((document) => !index.includes(`(${document})`))).toEqual([])
  })
})
