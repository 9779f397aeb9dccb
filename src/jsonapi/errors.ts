/** A JSON:API error object (https://jsonapi.org/format/#error-objects). */
export interface ErrorObject {
  readonly status?: string
  readonly title?: string
  readonly detail?: string
  readonly source?: { readonly pointer?: string; readonly parameter?: string; readonly header?: string }
  /** What a profile adds: the cursor pagination profile's `page.maxSize`. */
  readonly meta?: Readonly<Record<string, unknown>>
  /** `type`: the kind of error, as a profile names it (JSON:API 1.1). */
  readonly links?: { readonly type?: string }
}

/** A failure that becomes a JSON:API error response: thrown anywhere, rendered by the HTTP layer. */
export class JsonApiError extends Error {
  constructor(
    readonly status: number,
    readonly errors: readonly ErrorObject[],
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(errors[0]?.detail ?? `HTTP ${status}`)
    this.name = 'JsonApiError'
  }
}

const titles: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  409: 'Conflict',
  410: 'Gone',
  412: 'Precondition Failed',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  428: 'Precondition Required',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
}

/** One error object with `status`, `title`, `detail` and, where it applies, `source`. */
export function httpError(
  status: number,
  detail: string,
  source?: ErrorObject['source'],
  headers?: Record<string, string>,
): JsonApiError {
  const error: ErrorObject = { status: String(status), title: titles[status] ?? 'Error', detail }
  return new JsonApiError(status, [source ? { ...error, source } : error], headers)
}

/** A 400 naming the query parameter it is about. */
export function invalidParameter(parameter: string, detail: string): JsonApiError {
  return httpError(400, detail, { parameter })
}

/** An unknown record id: `{"errors": []}` exactly, as the interface document shows. */
export function recordNotFound(): JsonApiError {
  return new JsonApiError(404, [])
}

/** A field-level validation failure, shaped as the interface document shows. */
export interface FieldError {
  readonly detail: string
  readonly parameter: string
  readonly pointer: string
}

export function unprocessable(fields: readonly FieldError[]): JsonApiError {
  return new JsonApiError(
    422,
    fields.map((field) => ({
      title: 'Unprocessable Entity',
      detail: field.detail,
      source: { parameter: field.parameter, pointer: field.pointer },
    })),
  )
}

const count = new Intl.NumberFormat('en-US')

/**
 * At most `max` errors in full, then one more that counts the rest (same status and title as the
 * first it stands for): a body of 60,000 unknown attributes answers with 101 errors, not 60,000.
 */
export function cappedErrors(errors: readonly ErrorObject[], max: number): readonly ErrorObject[] {
  if (errors.length <= max + 1) return errors
  const rest = errors.length - max
  const { status, title } = errors[max] as ErrorObject
  const detail = `and ${count.format(rest)} more errors like these`
  return [...errors.slice(0, max), status === undefined ? { title, detail } : { status, title, detail }]
}
