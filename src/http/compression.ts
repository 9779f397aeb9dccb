import zlib from 'node:zlib'

/** The content codings this service answers in, besides identity. */
export type Coding = 'zstd' | 'br' | 'gzip'

/**
 * Answers shorter than this many characters (about 1 KiB of JSON) are sent as they are: a single
 * record saves a few hundred bytes at most, less than the cost of compressing it.
 */
export const COMPRESS_MIN_CHARS = 1024

/** When a client accepts several codings equally, the cheapest to produce for its size comes first. */
const preference: readonly Coding[] = ['zstd', 'br', 'gzip']

let lastHeader: string | null = null
let lastChoice: Coding | null = null

/**
 * The coding to answer in for an Accept-Encoding value (RFC 9110 §12.5.3): the acceptable one
 * (q > 0, named or through `*`) with the highest q, ties going by `preference`; null for identity.
 * Without the header nothing is compressed: identity is what every client can read. The last value
 * seen is remembered, since a client sends the same one with every request.
 */
export function negotiateCoding(header: string | null): Coding | null {
  if (header === null || header === '') return null
  if (header === lastHeader) return lastChoice
  const weights = codingWeights(header)
  const wildcard = weights.get('*') ?? 0
  let choice: Coding | null = null
  let best = 0
  for (const coding of preference) {
    const q = weights.get(coding) ?? wildcard
    if (q > best) {
      best = q
      choice = coding
    }
  }
  lastHeader = header
  lastChoice = choice
  return choice
}

/** Whether an Accept-Encoding value takes `coding`: with q > 0, named or through `*`. */
export function acceptsCoding(header: string | null, coding: Coding): boolean {
  if (header === null) return false
  const weights = codingWeights(header)
  return (weights.get(coding) ?? weights.get('*') ?? 0) > 0
}

/** Each coding an Accept-Encoding value names, with its q-value (`x-gzip` as `gzip`). */
function codingWeights(header: string): Map<string, number> {
  const weights = new Map<string, number>()
  // At most 64 members are read: the header's size is bounded anyway, and no client lists more.
  for (const member of header.split(',', 64)) {
    const [name = '', ...params] = member.split(';')
    let q = 1
    for (const param of params) {
      const [key, value] = param.split('=')
      if (key?.trim().toLowerCase() === 'q') q = qValue(value)
    }
    const coding = name.trim().toLowerCase()
    weights.set(coding === 'x-gzip' ? 'gzip' : coding, q)
  }
  return weights
}

/** A q-value (`0`, `0.5`, `1.000`); anything else counts as 0, so a garbled preference is not acted on. */
function qValue(text: string | undefined): number {
  const value = text?.trim() ?? ''
  return /^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(value) ? Number(value) : 0
}

/** The tag suffix of a coding: different codings of one answer are different representations. */
export function codingSuffix(coding: Coding | null): string {
  return coding === null ? '' : `-${coding}`
}

const C = zlib.constants

/**
 * Settings for answers made on request, measured on a list of 5,000 books (855 KB): zstd 1 gives
 * 17 KB in about 1 ms, brotli 4 32 KB in 4 ms, gzip 6 44 KB in 4 ms. Windows are kept small
 * (256 KiB): JSON repeats itself within a few records, and a compressing stream then holds about
 * 0.3 (zstd), 0.4 (gzip) or 0.8 MiB (brotli) while it lasts.
 */
const GZIP_LEVEL = 6
const BROTLI_QUALITY = 4
const WINDOW_BITS = 18
const ZSTD_LEVEL = 1

/** A whole answer in `coding`, compressed at once. For JSON text of up to 64 KiB this takes well under a millisecond. */
export function encodeText(text: string, coding: Coding): Uint8Array {
  switch (coding) {
    case 'gzip':
      return zlib.gzipSync(text, { level: GZIP_LEVEL })
    case 'br':
      return zlib.brotliCompressSync(text, {
        params: {
          [C.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
          [C.BROTLI_PARAM_LGWIN]: WINDOW_BITS,
          [C.BROTLI_PARAM_MODE]: C.BROTLI_MODE_TEXT,
          [C.BROTLI_PARAM_SIZE_HINT]: text.length,
        },
      })
    case 'zstd':
      // Bun's own: it sets up in a third of the time node:zlib takes, which is most of the cost
      // for a page of JSON. Given the whole input, zstd sizes its window to it.
      return Bun.zstdCompressSync(text, { level: ZSTD_LEVEL })
  }
}

/** A compressor that flushes after every write: each piece's bytes leave as soon as it is written. */
function flushingEncoder(coding: Coding): zlib.Gzip | zlib.BrotliCompress | zlib.ZstdCompress {
  switch (coding) {
    case 'gzip':
      return zlib.createGzip({ level: GZIP_LEVEL, flush: C.Z_SYNC_FLUSH })
    case 'br':
      return zlib.createBrotliCompress({
        flush: C.BROTLI_OPERATION_FLUSH,
        params: {
          [C.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
          [C.BROTLI_PARAM_LGWIN]: WINDOW_BITS,
          [C.BROTLI_PARAM_MODE]: C.BROTLI_MODE_TEXT,
        },
      })
    case 'zstd':
      return zlib.createZstdCompress({
        flush: C.ZSTD_e_flush,
        params: { [C.ZSTD_c_compressionLevel]: ZSTD_LEVEL, [C.ZSTD_c_windowLog]: WINDOW_BITS },
      })
  }
}

/**
 * `source` compressed piece by piece: each piece is read when the client has taken the one
 * before, compressed and flushed, so memory stays at one piece plus the compressor's window, and a
 * slow list still reaches the client as it is written. A failure of `source` fails this stream.
 */
export function encodeStream(source: ReadableStream<Uint8Array>, coding: Coding): ReadableStream<Uint8Array> {
  const reader = source.getReader()
  const encoder = flushingEncoder(coding)
  let output: Buffer[] = []
  // The compressor hands over all of a write's output before it calls the write's callback.
  encoder.on('data', (chunk: Buffer) => output.push(chunk))
  // A failure reaches the write's callback or the wait for the end; this only keeps it from being unhandled.
  encoder.on('error', () => {})
  const taken = (): Uint8Array => {
    const bytes = output.length === 1 ? (output[0] as Buffer) : Buffer.concat(output)
    output = []
    return bytes
  }
  const written = (piece: Uint8Array) =>
    new Promise<Uint8Array>((resolve, reject) =>
      encoder.write(piece, (error) => (error ? reject(error) : resolve(taken()))),
    )
  const ended = () =>
    new Promise<Uint8Array>((resolve, reject) => {
      encoder.once('end', () => resolve(taken()))
      encoder.once('error', reject)
      encoder.end()
    })
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        for (;;) {
          const { done, value } = await reader.read()
          const bytes = done ? await ended() : await written(value)
          if (bytes.length > 0) controller.enqueue(bytes)
          if (done) return controller.close()
          // An empty piece gives nothing to send: read on rather than send nothing.
          if (bytes.length > 0) return
        }
      } catch (error) {
        encoder.destroy()
        throw error
      }
    },
    async cancel(reason) {
      encoder.destroy()
      await reader.cancel(reason)
    },
  })
}

/** A long text as a stream of slices of it, for encodeStream: compressed in steps, not all at once. */
export function textStream(text: string, sliceChars: number): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  let start = 0
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (start >= text.length) return controller.close()
      // Not in the middle of a surrogate pair: each slice must encode on its own.
      let end = Math.min(start + sliceChars, text.length)
      const last = text.charCodeAt(end - 1)
      if (end < text.length && last >= 0xd800 && last <= 0xdbff) end++
      controller.enqueue(encoder.encode(text.slice(start, end)))
      start = end
    },
  })
}
