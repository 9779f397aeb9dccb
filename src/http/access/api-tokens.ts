import { randomBytes, timingSafeEqual } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'

/**
 * API tokens: the file that lists them (API_TOKENS_FILE), one `NAME SCOPE SHA256` a line, and the
 * set the service checks a presented token against. The file holds hashes only: a token is shown
 * once, by `catalogue token create`, and never stored or logged.
 */

export type TokenScope = 'read' | 'write'

export interface TokenEntry {
  /** What the request log and the rate limiter know the token by. */
  readonly name: string
  readonly scope: TokenScope
  /** SHA-256 of the token, 32 bytes. */
  readonly hash: Uint8Array
  /** The rate limiter's key for this token, computed once. */
  readonly rateKey: string
}

/** A token file that cannot be used: the message says where and why, in one line. */
export class TokenFileError extends Error {}

export const TOKEN_NAME = /^[A-Za-z0-9._-]{1,64}$/
/** Most tokens one file may list: each request compares its token with every one of them. */
export const MAX_TOKENS = 1000
/** Largest token file read: 1000 lines of a 64-character name and a hash fit ten times over. */
export const MAX_TOKEN_FILE_BYTES = 1024 * 1024
/**
 * Longest token a request may present (RFC 6750's b64token, of the shape `token create` makes or
 * longer); anything longer is refused without hashing it.
 */
const PRESENTED_TOKEN = /^[A-Za-z0-9\-._~+/]{1,512}=*$/

export function hashToken(token: string): Uint8Array {
  return Bun.CryptoHasher.hash('sha256', token) as Uint8Array
}

/** A new random token: 32 bytes from the system's CSPRNG, base64url, after a `cat_` prefix secret scanners can spot. */
export function newToken(): string {
  return `cat_${randomBytes(32).toString('base64url')}`
}

/** The token file's line for a token. */
export function tokenFileLine(name: string, scope: TokenScope, token: string): string {
  return `${name} ${scope} ${Buffer.from(hashToken(token)).toString('hex')}`
}

/** The entries of a token file's text; throws TokenFileError naming the first bad line. */
export function parseTokenFile(text: string): TokenEntry[] {
  const entries: TokenEntry[] = []
  const names = new Set<string>()
  const hashes = new Set<string>()
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const bad = (why: string) => new TokenFileError(`line ${i + 1}: ${why}`)
    const content = (lines[i] as string).replace(/#.*/, '').trim()
    if (content === '') continue
    const fields = content.split(/\s+/)
    if (fields.length !== 3) throw bad('expected NAME SCOPE SHA256 (three fields)')
    const [name, scope, hex] = fields as [string, string, string]
    if (!TOKEN_NAME.test(name)) throw bad('the name must be 1 to 64 letters, digits, ".", "_" or "-"')
    if (scope !== 'read' && scope !== 'write')
      throw bad(`the scope must be read or write (got "${scope.slice(0, 20)}")`)
    if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw bad('the hash must be 64 hexadecimal digits (a SHA-256)')
    if (names.has(name)) throw bad(`the name "${name}" is listed twice`)
    const hash = hex.toLowerCase()
    if (hashes.has(hash)) throw bad('this hash is listed twice')
    if (entries.length === MAX_TOKENS) throw bad(`more than ${MAX_TOKENS} tokens`)
    names.add(name)
    hashes.add(hash)
    entries.push({ name, scope, hash: Buffer.from(hash, 'hex'), rateKey: `token:${name}` })
  }
  return entries
}

/** Reads and parses the token file at `path`; throws TokenFileError when it cannot be used. */
export function readTokenFile(path: string): TokenEntry[] {
  let text: string
  try {
    const stat = statSync(path)
    if (!stat.isFile()) throw new TokenFileError(`${path} is not a file`)
    if (stat.size > MAX_TOKEN_FILE_BYTES) {
      throw new TokenFileError(`${path} is larger than ${MAX_TOKEN_FILE_BYTES} bytes`)
    }
    text = readFileSync(path, 'utf8')
  } catch (error) {
    if (error instanceof TokenFileError) throw error
    const { code, message } = error as Error & { code?: string }
    throw new TokenFileError(`cannot read ${path}: ${code === 'ENOENT' ? 'no such file' : (code ?? message)}`)
  }
  try {
    return parseTokenFile(text)
  } catch (error) {
    if (error instanceof TokenFileError) throw new TokenFileError(`${path} ${error.message}`)
    throw error
  }
}

/** The tokens the service accepts; replaced whole when the file is read again (SIGHUP). */
export class TokenSet {
  private entries: readonly TokenEntry[]

  constructor(entries: readonly TokenEntry[]) {
    this.entries = entries
  }

  get size(): number {
    return this.entries.length
  }

  replace(entries: readonly TokenEntry[]): void {
    this.entries = entries
  }

  /**
   * The entry for `token`, or undefined. Its hash is compared with every entry's, each in constant
   * time and with no early exit, so the time taken says nothing about the tokens listed.
   */
  find(token: string): TokenEntry | undefined {
    if (!PRESENTED_TOKEN.test(token)) return undefined
    const hash = hashToken(token)
    let found: TokenEntry | undefined
    for (const entry of this.entries) {
      if (timingSafeEqual(hash, entry.hash) && found === undefined) found = entry
    }
    return found
  }
}
