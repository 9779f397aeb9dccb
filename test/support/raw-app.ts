import { type Answer, openTestApp, type TestApp } from './harness'

/** A request sent exactly as given: no default Accept or Content-Type, and the body's bytes untouched. */
export interface RawRequest {
  readonly headers?: Record<string, string>
  readonly body?: RequestInit['body']
}

/**
 * The harness's app plus `send`, for what `request` cannot express: a missing Accept or
 * Content-Type, bytes that are not UTF-8, a streamed body without Content-Length.
 */
export interface RawTestApp extends TestApp {
  send(method: string, path: string, request?: RawRequest): Promise<Answer>
}

export function openRawTestApp(options: { maxBodyBytes?: number } = {}): RawTestApp {
  const test = openTestApp(options)

  async function send(method: string, path: string, { headers, body }: RawRequest = {}): Promise<Answer> {
    const init: RequestInit & { duplex?: 'half' } = { method, headers: headers ?? {} }
    if (body !== undefined && body !== null) {
      init.body = body
      if (body instanceof ReadableStream) init.duplex = 'half'
    }
    const response = await test.app.handle(new Request(`http://localhost${path}`, init))
    const text = await response.text()
    const isJson = text !== '' && response.headers.get('content-type')?.includes('json')
    return { status: response.status, headers: response.headers, text, json: isJson ? JSON.parse(text) : undefined }
  }

  return { ...test, send }
}
