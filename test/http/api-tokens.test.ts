import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  MAX_TOKEN_FILE_BYTES,
  MAX_TOKENS,
  parseTokenFile,
  readTokenFile,
  TokenFileError,
  TokenSet,
} from '../../src/http/access/api-tokens'
import { removeTempDirs, tempDir } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

const sha256 = (token: string) => new Bun.CryptoHasher('sha256').update(token).digest('hex')
const HASH = sha256('cat_some-token')

afterAll(removeTempDirs)

/** The message of the TokenFileError that parsing `text` throws. */
function parseError(text: string): string {
  try {
    parseTokenFile(text)
  } catch (error) {
    if (error instanceof TokenFileError) return error.message
    throw error
  }
  throw new Error('expected a TokenFileError')
}

function readError(path: string): string {
  try {
    readTokenFile(path)
  } catch (error) {
    if (error instanceof TokenFileError) return error.message
    throw error
  }
  throw new Error('expected a TokenFileError')
}

describe('the token file', () => {
  it('reads NAME SCOPE SHA256 lines, skipping comments, blank lines and trailing comments', () => {
    const entries = parseTokenFile(
      `# tokens\n\nci write ${HASH}  # the build\r\n  reports.v2 read ${sha256('other').toUpperCase()}\n`,
    )
    expect(entries.map(({ name, scope }) => ({ name, scope }))).toEqual([
      { name: 'ci', scope: 'write' },
      { name: 'reports.v2', scope: 'read' },
    ])
    expect(Buffer.from(entries[0]?.hash ?? []).toString('hex')).toBe(HASH)
  })

  it.each([
    ['two fields', `ci write`, 'line 1: expected NAME SCOPE SHA256'],
    ['four fields', `ci write ${HASH} extra`, 'line 1: expected NAME SCOPE SHA256'],
    ['an unknown scope', `ci admin ${HASH}`, 'line 1: the scope must be read or write'],
    ['a name with other characters', `ci/cd write ${HASH}`, 'line 1: the name must be'],
    ['a name over 64 characters', `${'n'.repeat(65)} write ${HASH}`, 'line 1: the name must be'],
    ['a short hash', `ci write ${HASH.slice(1)}`, 'line 1: the hash must be 64 hexadecimal digits'],
    ['a hash that is not hexadecimal', `ci write ${'g'.repeat(64)}`, 'line 1: the hash must be 64 hexadecimal digits'],
    ['a name listed twice', `ci write ${HASH}\nci read ${sha256('x')}`, 'line 2: the name "ci" is listed twice'],
    ['a hash listed twice', `ci write ${HASH}\nother read ${HASH.toUpperCase()}`, 'line 2: this hash is listed twice'],
  ])('refuses %s, naming the line', (_, text, message) => {
    expect(parseError(text)).toStartWith(message)
  })

  it(`refuses more than ${MAX_TOKENS} tokens`, () => {
    const lines = Array.from({ length: MAX_TOKENS + 1 }, (_, i) => `t${i} read ${sha256(String(i))}`)
    expect(parseTokenFile(lines.slice(0, MAX_TOKENS).join('\n'))).toHaveLength(MAX_TOKENS)
    expect(parseError(lines.join('\n'))).toBe(`line ${MAX_TOKENS + 1}: more than ${MAX_TOKENS} tokens`)
  })

  it('names the file when it is missing, a folder, or too large', () => {
    const dir = tempDir('catalogue-tokens-')
    expect(readError(join(dir, 'absent'))).toBe(`cannot read ${join(dir, 'absent')}: no such file`)
    mkdirSync(join(dir, 'folder'))
    expect(readError(join(dir, 'folder'))).toBe(`${join(dir, 'folder')} is not a file`)
    writeFileSync(join(dir, 'large'), `# ${'x'.repeat(MAX_TOKEN_FILE_BYTES)}\n`)
    expect(readError(join(dir, 'large'))).toBe(`${join(dir, 'large')} is larger than ${MAX_TOKEN_FILE_BYTES} bytes`)
    writeFileSync(join(dir, 'bad'), `# fine\nci write nothex\n`)
    expect(readError(join(dir, 'bad'))).toStartWith(`${join(dir, 'bad')} line 2: the hash`)
  })
})

describe('TokenSet.find', () => {
  const tokens = new TokenSet(parseTokenFile(`ci write ${HASH}\nreader read ${sha256('cat_reader')}`))

  it('finds the entry whose hash is the SHA-256 of the token', () => {
    expect(tokens.find('cat_some-token')?.name).toBe('ci')
    expect(tokens.find('cat_reader')?.scope).toBe('read')
  })

  it('finds nothing for another token, the hash itself, or a token over 512 characters', () => {
    expect(tokens.find('cat_some-token2')).toBeUndefined()
    expect(tokens.find(HASH)).toBeUndefined()
    const long = 'a'.repeat(513)
    const withLong = new TokenSet(parseTokenFile(`long read ${sha256(long)}`))
    expect(withLong.find(long)).toBeUndefined()
    expect(withLong.find('a'.repeat(512))).toBeUndefined()
    const longest = 'b'.repeat(512)
    expect(new TokenSet(parseTokenFile(`longest read ${sha256(longest)}`)).find(longest)?.name).toBe('longest')
  })
})
