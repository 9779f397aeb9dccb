import { Elysia } from 'elysia'
import { httpError } from '../jsonapi/errors'
import { checkContentType } from '../jsonapi/media-type'
import type { ParsedBody } from './parsed-body'
import { decodeBody, requestCodings } from './request-coding'

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** Reads the body, refusing (413) one over `maxBytes` before or while it arrives. */
async function readBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  const tooLarge = () => httpError(413, `The request body is larger than the limit of ${maxBytes} bytes`)
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge()
  if (!request.body) return new Uint8Array()
  // A body of declared length within the limit is read whole, natively: the server reads no more
  // than the length says. Through the stream below, a PATCH's 80 bytes took a tenth of its CPU.
  if (declared !== null && request.headers.get('transfer-encoding') === null) return request.bytes()
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of request.body) {
    size += chunk.byteLength
    if (size > maxBytes) throw tooLarge()
    chunks.push(chunk)
  }
  return chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks)
}

/**
 * Whether JSON text holds more than `max` object members (name/value pairs), counted as the colons
 * outside strings, without parsing: about 1 ms a MiB. Parsing an object of 120,000 members and
 * checking each cost some 100 ms of the main thread (bench/parts/limits/bounds.ts); refused here, they cost this
 * scan. Bytes, not text: no byte of a multi-byte UTF-8 character is `"`, `\\` or `:`.
 */
export function holdsMoreMembers(bytes: Uint8Array, max: number): boolean {
  // A member takes at least 4 bytes (`"":0`): a shorter body cannot hold more.
  if (bytes.length <= max * 4) return false
  let members = 0
  let inString = false
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]
    if (inString) {
      if (byte === 0x5c) i++
      else if (byte === 0x22) inString = false
    } else if (byte === 0x22) inString = true
    else if (byte === 0x3a && ++members > max) return true
  }
  return false
}

/** What the body parser refuses a body over: its bytes as sent and decoded (413), its members (413). */
export interface BodyLimits {
  readonly maxBytes: number
  readonly maxMembers: number
}

/**
 * Every request body goes through here: a JSON:API or JSON media type (415), a content coding the
 * service decodes (415, with Accept-Encoding), within the size limit as sent and once decoded
 * (413), within the members limit (413), UTF-8 JSON (400). Elysia's own parsers never see a body.
 */
export function jsonApiBodyParser({ maxBytes, maxMembers }: BodyLimits) {
  return new Elysia({ name: 'jsonapi-body-parser', seed: `${maxBytes} ${maxMembers}` }).onParse(
    { as: 'global' },
    async ({ request }): Promise<ParsedBody> => {
      // A DELETE without a body is the usual case: there is nothing to check.
      const empty = request.body === null || request.headers.get('content-length') === '0'
      if (empty && request.method === 'DELETE') return { document: undefined }
      const unsupported = checkContentType(request.headers.get('content-type'))
      if (unsupported) throw unsupported
      const codings = requestCodings(request.headers.get('content-encoding'))
      const sent = await readBody(request, maxBytes)
      const bytes = codings.length > 0 ? await decodeBody(sent, codings, maxBytes) : sent
      if (holdsMoreMembers(bytes, maxMembers)) {
        throw httpError(
          413,
          `The request body holds more than ${maxMembers} members (name/value pairs in its objects), the limit`,
        )
      }
      let text: string
      try {
        text = utf8.decode(bytes)
      } catch {
        throw httpError(400, 'The request body is not valid UTF-8', { pointer: '' })
      }
      if (text.trim() === '')
        throw httpError(400, 'The request body is empty: send a JSON:API document', { pointer: '' })
      try {
        return { document: JSON.parse(text) }
      } catch (error) {
        throw httpError(400, `The request body is not valid JSON: ${(error as Error).message}`, { pointer: '' })
      }
    },
  )
}
