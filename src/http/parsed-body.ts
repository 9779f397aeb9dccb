/*
 * The body as the body parser (body-parser.ts) leaves it for the controllers: apart from the parser,
 * so that what imports only this (the controllers, hence the read threads) does not load Elysia.
 */

/** Wraps the parsed JSON so that a literal `null` body is not mistaken for "not parsed". */
export interface ParsedBody {
  readonly document: unknown
}

/** The document a request carried, as the body parser left it. */
export function documentOf(body: unknown): unknown {
  return (body as ParsedBody | undefined)?.document
}
