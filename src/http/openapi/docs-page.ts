import zlib from 'node:zlib'
import { Elysia } from 'elysia'
// The viewer's browser bundle, from its npm package (not exported, hence the path): `bun build
// --compile` embeds the file in the executable, so the page needs nothing from the internet.
// @ts-expect-error TypeScript has no types for a file imported as a file
import scalarBundlePath from '../../../node_modules/@scalar/api-reference/dist/browser/standalone.js' with {
  type: 'file',
}
import scalarPackage from '../../../node_modules/@scalar/api-reference/package.json'
import { acceptsCoding } from '../compression'
import { FAVICON_SVG } from './favicon'
import { DOCS_PATH, SPEC_PATH } from './openapi'

/** Where the page loads the viewer from; the version in the query makes a new one a new URL. */
export const SCALAR_PATH = `${DOCS_PATH}/scalar.js`
const scalarUrl = `${SCALAR_PATH}?v=${scalarPackage.version}`
/** The page's icon (favicon.ts): linked, so that browsers do not ask for /favicon.ico. */
export const FAVICON_PATH = `${DOCS_PATH}/favicon.svg`

/**
 * Scalar's settings: the document by absolute path (the page works at /docs and /docs/), and
 * nothing from elsewhere: no fonts from Scalar's servers, no telemetry, no button that opens
 * Scalar's hosted client, no AI agent or MCP link (both send the document to Scalar), no developer tools. Requests sent with "Test Request" go to the service.
 */
const scalarConfiguration = {
  url: SPEC_PATH,
  withDefaultFonts: false,
  telemetry: false,
  hideClientButton: true,
  showDeveloperTools: 'never',
  agent: { disabled: true },
  mcp: { disabled: true },
  // Every operation in the sidebar from the start: a few dozen, cheap to draw.
  defaultOpenAllTags: true,
}

/**
 * The page's only script is the viewer, from this service; the viewer injects its styles inline and
 * draws icons as data: images. Nothing else is allowed: no other origin, no frames, no forms.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

const escapeAttribute = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')

const page = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Library catalogue API</title>
    <link rel="icon" type="image/svg+xml" href="${FAVICON_PATH}">
  </head>
  <body>
    <script id="api-reference" data-configuration="${escapeAttribute(JSON.stringify(scalarConfiguration))}"></script>
    <script src="${scalarUrl}"></script>
  </body>
</html>
`

const pageHeaders = {
  'content-type': 'text/html; charset=utf-8',
  // Said, though Bun would count it too: the request log reads it (request-log.ts).
  'content-length': String(Buffer.byteLength(page)),
  'content-security-policy': DOCS_CSP,
  'cache-control': 'no-cache',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
}

const faviconHeaders = {
  'content-type': 'image/svg+xml',
  'cache-control': 'public, max-age=86400',
  'x-content-type-options': 'nosniff',
  // Opened on its own, the drawing may run nothing and load nothing.
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
}

/**
 * Run before the viewer: Zod, inside it, would probe whether it may compile validators with
 * `Function('')`, which the page's CSP refuses (and reports); told so, it validates without compiling.
 */
const PRELUDE = 'globalThis.__zod_globalConfig = { jitless: true };\n'

/**
 * The viewer (4 MiB, 1.2 MiB gzipped), compressed once for all on a thread of the zlib pool (some
 * 70-100 ms of CPU, which on the main thread would hold up every other request) and kept: by
 * `prepare`, which the service calls once it listens, else by the first request that takes gzip.
 * Requests that arrive meanwhile wait for that one compression: made per request, 40 at once held
 * /health up for seconds. Waiting, they are all answered in the same turn when it ends: 51 MB
 * written at once, which held /health up 50-80 ms, 400 on a loaded machine; found ready, each is
 * answered as it arrives (bench/parts/limits/bounds.ts).
 */
export class ViewerScript {
  /** Compressions begun, for the tests: one, however many requests asked at once. */
  compressions = 0
  private gzipped: Promise<Uint8Array> | undefined

  /** Compresses it now, in the background, so that the first requests find it ready. */
  prepare(): void {
    this.gzip().catch(() => {
      // Tried again by the next request, whose answer reports the failure.
    })
  }

  gzip(): Promise<Uint8Array> {
    this.gzipped ??= this.compress().catch((error: unknown) => {
      // A failure (the file unreadable) is not kept: the next request tries again.
      this.gzipped = undefined
      throw error
    })
    return this.gzipped
  }

  private async compress(): Promise<Uint8Array> {
    this.compressions++
    const bytes = Buffer.concat([Buffer.from(PRELUDE), await Bun.file(scalarBundlePath as string).bytes()])
    return new Promise((resolve, reject) => {
      zlib.gzip(bytes, (error, gzipped) => (error ? reject(error) : resolve(gzipped)))
    })
  }
}

async function scalarBundle(request: Request, viewer: ViewerScript): Promise<Response> {
  const headers: Record<string, string> = {
    'content-type': 'text/javascript; charset=utf-8',
    // The URL changes with the viewer's version: a browser may keep this one for good.
    'cache-control': 'public, max-age=31536000, immutable',
    'x-content-type-options': 'nosniff',
    vary: 'accept-encoding',
  }
  if (!acceptsCoding(request.headers.get('accept-encoding'), 'gzip')) {
    const file = Bun.file(scalarBundlePath as string)
    return new Response(preludeThen(file.stream()), {
      headers: { ...headers, 'content-length': String(PRELUDE.length + file.size) },
    })
  }
  const gzipped = await viewer.gzip()
  return new Response(gzipped, {
    headers: { ...headers, 'content-encoding': 'gzip', 'content-length': String(gzipped.byteLength) },
  })
}

/** The prelude, then the bundle as it is read: nothing held in memory. */
function preludeThen(bundle: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = bundle.getReader()
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(PRELUDE))
    },
    async pull(controller) {
      const { done, value } = await reader.read()
      if (done) controller.close()
      else controller.enqueue(value)
    },
    cancel: (reason) => reader.cancel(reason),
  })
}

/** The API reference page at /docs (and /docs/), and the viewer it loads, compressed by `viewer`. */
export function docsPage(viewer: ViewerScript) {
  return new Elysia()
    .get(DOCS_PATH, () => new Response(page, { headers: pageHeaders }), { detail: { hide: true } })
    .get(`${DOCS_PATH}/`, () => new Response(page, { headers: pageHeaders }), { detail: { hide: true } })
    .get(SCALAR_PATH, ({ request }) => scalarBundle(request, viewer), { detail: { hide: true } })
    .get(FAVICON_PATH, () => new Response(FAVICON_SVG, { headers: faviconHeaders }), { detail: { hide: true } })
}
