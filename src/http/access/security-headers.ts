import { Elysia } from 'elysia'

/**
 * Headers on every answer: browsers must not guess a type other than the one sent (a JSON body
 * read as HTML), and pages (the /docs page) send no Referer to the sites they link to. Elysia
 * copies these into each request's headers, so they cost no hook.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
}

export const securityHeaders = new Elysia({ name: 'security-headers' }).headers(SECURITY_HEADERS)
