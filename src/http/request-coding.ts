import zlib from 'node:zlib'
import { httpError } from '../jsonapi/errors'

type Decoder = (
  input: Uint8Array,
  options: { maxOutputLength: number },
  done: (error: Error | null, output: Buffer) => void,
) => void

/**
 * The content codings a request body may carry (RFC 9110 §8.4.1), each decoded by node:zlib on
 * its thread pool: `deflate` is the zlib format, as HTTP has it.
 */
const decoders: Readonly<Record<string, Decoder>> = {
  gzip: zlib.gunzip,
  'x-gzip': zlib.gunzip,
  deflate: zlib.inflate,
  br: zlib.brotliDecompress,
  zstd: zlib.zstdDecompress,
}

/** What a 415 for a coding the service cannot decode offers instead (RFC 9110 §12.5.3). */
export const ACCEPTED_CODINGS = 'gzip, deflate, br, zstd'

/** At most this many codings applied one over another: each decoding costs up to the body limit again. */
const MAX_CODINGS = 2

/**
 * The codings of a Content-Encoding value, in the order they were applied (`identity` dropped);
 * 415 with Accept-Encoding for any other, or for more than MAX_CODINGS.
 */
export function requestCodings(header: string | null): string[] {
  if (header === null) return []
  const codings = header
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity')
  const unknown = codings.find((coding) => !Object.hasOwn(decoders, coding))
  if (unknown !== undefined || codings.length > MAX_CODINGS) {
    const why =
      unknown !== undefined
        ? `The request body's Content-Encoding "${unknown}" is not one the service decodes`
        : `The request body may carry at most ${MAX_CODINGS} content codings`
    throw httpError(
      415,
      `${why}: send it as ${ACCEPTED_CODINGS}, or not encoded`,
      { header: 'Content-Encoding' },
      {
        'accept-encoding': ACCEPTED_CODINGS,
      },
    )
  }
  return codings
}

/**
 * `bytes` decoded, last coding first, each step stopping as soon as its output passes `maxBytes`
 * (413): a small body that inflates to gigabytes costs no more than one within the limit. 400 for
 * bytes that are not what their coding says.
 */
export async function decodeBody(bytes: Uint8Array, codings: readonly string[], maxBytes: number): Promise<Uint8Array> {
  let decoded = bytes
  for (const coding of [...codings].reverse()) {
    const decode = decoders[coding] as Decoder
    decoded = await new Promise<Uint8Array>((resolve, reject) => {
      decode(decoded, { maxOutputLength: maxBytes }, (error, output) => {
        if (!error) return resolve(output)
        if ((error as Error & { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
          return reject(httpError(413, `The request body is larger than the limit of ${maxBytes} bytes once decoded`))
        }
        reject(httpError(400, `The request body is not valid ${coding} data: ${error.message}`, { pointer: '' }))
      })
    })
  }
  return decoded
}
