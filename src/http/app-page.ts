import { basename } from 'node:path'
import { Elysia } from 'elysia'
// The browser app (app/): its page, which Bun bundles with its scripts and styles. From the source,
// the import gives the page's path and the app is bundled here at its first request; `bun build
// --compile` bundles it ahead and embeds the files in the executable (`files`).
import appPage from '../../app/index.html'
import { acceptsCoding } from './compression'

/** Where the app is served: its page at /app/, its files beside it, every other path under it its page. */
export const APP_PATH = '/app'

/**
 * The app loads its own scripts and styles and talks to this service alone; nothing inline,
 * nothing from another origin, no frames.
 */
export const APP_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

/** One file of the built app, as served, gzipped once for the browsers that take it. */
interface AppFile {
  readonly name: string
  readonly type: string
  readonly bytes: Uint8Array<ArrayBuffer>
  readonly gzipped: Uint8Array
  readonly etag: string
}

interface BuiltApp {
  readonly page: AppFile
  readonly assets: ReadonlyMap<string, AppFile>
}

function appFile(name: string, type: string, bytes: Uint8Array<ArrayBuffer>): AppFile {
  const etag = `"${Bun.hash(bytes).toString(36)}"`
  return { name, type, bytes, gzipped: Bun.gzipSync(bytes, { level: 9 }), etag }
}

/** The files of the build: embedded ones in an executable, else bundled now from the source. */
async function buildApp(): Promise<BuiltApp> {
  const files: AppFile[] = []
  if (appPage.files) {
    for (const file of appPage.files) {
      const type = file.headers['content-type'] ?? 'application/octet-stream'
      files.push(appFile(basename(file.path), type, await Bun.file(file.path).bytes()))
    }
  } else {
    const built = await Bun.build({ entrypoints: [appPage.index], minify: true, target: 'browser' })
    if (!built.success) throw new AggregateError(built.logs, 'the app did not build')
    for (const output of built.outputs) {
      files.push(appFile(basename(output.path), output.type, new Uint8Array(await output.arrayBuffer())))
    }
  }
  const built = files.find((f) => f.type.startsWith('text/html'))
  if (!built) throw new Error('the app has no page')
  const assets = files.filter((f) => f !== built)
  // The page names its files from the root when compiled (`/chunk-1a2b.js`), beside itself when
  // bundled here (`./chunk-1a2b.js`): beside itself, under its base (/app/), either way.
  let html = new TextDecoder().decode(built.bytes)
  for (const asset of assets) html = html.replaceAll(`"/${asset.name}"`, `"./${asset.name}"`)
  const page = appFile(built.name, built.type, new TextEncoder().encode(html))
  return { page, assets: new Map(assets.map((f) => [f.name, f])) }
}

/** The app, built once per process at its first request. */
export class AppFiles {
  private built: Promise<BuiltApp> | undefined

  get(): Promise<BuiltApp> {
    this.built ??= buildApp().catch((error: unknown) => {
      this.built = undefined
      throw error
    })
    return this.built
  }
}

function answer(request: Request, file: AppFile, cacheControl: string): Response {
  const headers: Record<string, string> = {
    'content-type': file.type,
    'cache-control': cacheControl,
    etag: file.etag,
    vary: 'accept-encoding',
    'content-security-policy': APP_CSP,
  }
  if (request.headers.get('if-none-match') === file.etag) return new Response(null, { status: 304, headers })
  if (acceptsCoding(request.headers.get('accept-encoding'), 'gzip')) {
    return new Response(file.gzipped, {
      headers: { ...headers, 'content-encoding': 'gzip', 'content-length': String(file.gzipped.byteLength) },
    })
  }
  return new Response(file.bytes, { headers: { ...headers, 'content-length': String(file.bytes.byteLength) } })
}

/**
 * GET /app/...: a built file by its name (named by its content: kept for good), else the page,
 * which finds its view in the URL (a link or a reload shows the same view). /app itself is sent to
 * /app/, so that the page's relative links resolve under it.
 */
export function appRoutes(files: AppFiles) {
  const serve = async ({ request }: { request: Request }) => {
    const path = new URL(request.url).pathname
    // Elysia routes /app and /app/ alike: the path says which was asked.
    if (path === APP_PATH) return new Response(null, { status: 308, headers: { location: `${APP_PATH}/` } })
    const built = await files.get()
    const asset = built.assets.get(path.slice(APP_PATH.length + 1))
    if (asset) return answer(request, asset, 'public, max-age=31536000, immutable')
    return answer(request, built.page, 'no-cache')
  }
  return new Elysia()
    .get(APP_PATH, serve, { detail: { hide: true } })
    .get(`${APP_PATH}/*`, serve, { detail: { hide: true } })
}

/**
 * Whether a request for GET / comes from a browser that would rather have a page than the JSON:API
 * index: it names text/html, and weighs it no less than the JSON:API media type.
 */
export function wantsPage(accept: string | null): boolean {
  if (accept === null) return false
  const weights = new Map<string, number>()
  for (const range of accept.split(',')) {
    const [type = '', ...params] = range.split(';').map((part) => part.trim().toLowerCase())
    const q = params.find((p) => p.startsWith('q='))
    weights.set(type, q === undefined ? 1 : Number(q.slice(2)) || 0)
  }
  const html = weights.get('text/html') ?? 0
  return html > 0 && html >= (weights.get('application/vnd.api+json') ?? 0)
}
