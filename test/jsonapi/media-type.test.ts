import { describe, expect, it } from 'bun:test'
import { JsonApiError } from '../../src/jsonapi/errors'
import { checkAccept, checkContentType, requestedCursorProfile } from '../../src/jsonapi/media-type'

const ATOMIC = 'https://jsonapi.org/ext/atomic'

describe('checkContentType', () => {
  it.each([
    ['the JSON:API media type', 'application/vnd.api+json'],
    ['the JSON:API media type in other letter case', 'Application/VND.API+JSON'],
    ['JSON:API with charset=utf-8', 'application/vnd.api+json; charset=utf-8'],
    ['JSON:API with charset=UTF-8', 'application/vnd.api+json;charset=UTF-8'],
    ['JSON:API with a quoted charset="utf-8"', 'application/vnd.api+json; charset="utf-8"'],
    ['JSON:API with a profile', 'application/vnd.api+json; profile="https://example.com/profiles/timestamps"'],
    ['JSON:API with the atomic extension, which the server has', `application/vnd.api+json; ext="${ATOMIC}"`],
    ['JSON:API with two profiles', 'application/vnd.api+json; profile="https://example.com/a https://example.com/b"'],
    [
      'JSON:API with a profile holding a quoted semicolon',
      'application/vnd.api+json; profile="https://example.com/a;b"',
    ],
    [
      'JSON:API with a profile and charset=utf-8',
      'application/vnd.api+json; profile="https://example.com/p"; charset=utf-8',
    ],
    ['plain JSON', 'application/json'],
    ['plain JSON with charset=utf-8', 'application/json; charset=utf-8'],
  ])('accepts %s', (_, header) => {
    expect(checkContentType(header)).toBeNull()
  })

  it.each([
    ['a missing header', null],
    ['an empty header', ''],
    ['text/plain', 'text/plain'],
    ['a form', 'application/x-www-form-urlencoded'],
    ['multipart form data', 'multipart/form-data; boundary=x'],
    ['a look-alike media type', 'application/vnd.api+jsonx'],
    ['JSON:API with another charset', 'application/vnd.api+json; charset=iso-8859-1'],
    ['JSON:API with an unknown parameter', 'application/vnd.api+json; foo=bar'],
    ['JSON:API with an extension the server lacks', 'application/vnd.api+json; ext="https://example.com/ext/unknown"'],
    [
      'JSON:API with a profile and an extension the server lacks',
      'application/vnd.api+json; profile="https://example.com/p"; ext="https://example.com/ext/unknown"',
    ],
    [
      'JSON:API with the atomic extension and one the server lacks',
      `application/vnd.api+json; ext="${ATOMIC} https://example.com/x"`,
    ],
    ['plain JSON with another charset', 'application/json; charset=latin1'],
    ['plain JSON with an unknown parameter', 'application/json; foo=bar'],
  ])('refuses %s with 415 naming the Content-Type header', (_, header) => {
    const error = checkContentType(header)
    expect(error).toBeInstanceOf(JsonApiError)
    expect(error?.status).toBe(415)
    expect(error?.errors).toEqual([
      {
        status: '415',
        title: 'Unsupported Media Type',
        detail: expect.stringMatching(/\S/),
        source: { header: 'Content-Type' },
      },
    ])
  })
})

describe('checkAccept', () => {
  it.each([
    ['a missing header', null],
    ['an empty header', ''],
    ['the JSON:API media type', 'application/vnd.api+json'],
    ['anything', '*/*'],
    ['any application type', 'application/*'],
    ['plain JSON', 'application/json'],
    ['JSON:API with a profile', 'application/vnd.api+json; profile="https://example.com/p"'],
    ['JSON:API with charset=utf-8', 'application/vnd.api+json; charset=utf-8'],
    ['JSON:API with a quality', 'application/vnd.api+json; q=0.9'],
    ['JSON:API with the atomic extension, which the server has', `application/vnd.api+json; ext="${ATOMIC}"`],
    ['a browser that offers no JSON at all', 'text/html'],
    [
      'a list where one JSON:API instance is plain',
      `application/vnd.api+json; ext="${ATOMIC}", application/vnd.api+json`,
    ],
    ['a list where JSON:API has parameters but */* is offered', 'application/vnd.api+json; foo=bar, */*;q=0.1'],
    [
      'a list where JSON:API has parameters but plain JSON is offered',
      'application/vnd.api+json; foo=bar, application/json',
    ],
  ])('accepts %s', (_, header) => {
    expect(checkAccept(header)).toBeNull()
  })

  it.each([
    ['JSON:API with an extension the server lacks only', 'application/vnd.api+json; ext="https://example.com/x"'],
    ['JSON:API with an unknown parameter only', 'application/vnd.api+json; foo=bar'],
    ['JSON:API with another charset only', 'application/vnd.api+json; charset=iso-8859-1'],
    [
      'every JSON:API instance with unsupported parameters',
      'application/vnd.api+json; foo=bar, application/vnd.api+json; ext="https://example.com/x"',
    ],
    ['unsupported JSON:API beside a non-JSON type', 'text/html, application/vnd.api+json; foo=bar'],
    [
      'unsupported JSON:API where the plain instance has q=0',
      'application/vnd.api+json; q=0, application/vnd.api+json; foo=bar',
    ],
    ['unsupported JSON:API where */* has q=0', '*/*; q=0, application/vnd.api+json; foo=bar'],
    [
      'an extension list holding a quoted comma',
      'application/vnd.api+json; ext="https://example.com/a, application/json"',
    ],
  ])('refuses %s with 406 naming the Accept header', (_, header) => {
    const error = checkAccept(header)
    expect(error).toBeInstanceOf(JsonApiError)
    expect(error?.status).toBe(406)
    expect(error?.errors).toEqual([
      { status: '406', title: 'Not Acceptable', detail: expect.stringMatching(/\S/), source: { header: 'Accept' } },
    ])
  })
})

describe('requestedCursorProfile', () => {
  const profile = 'https://jsonapi.org/profiles/ethanresnick/cursor-pagination'
  it.each([
    ['the profile', `application/vnd.api+json; profile="${profile}"`, profile],
    [
      'the profile as it names itself, http with a final slash',
      `application/vnd.api+json; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"`,
      'http://jsonapi.org/profiles/ethanresnick/cursor-pagination/',
    ],
    [
      'the profile among others',
      `application/vnd.api+json; profile="https://example.com/a ${profile}/"`,
      `${profile}/`,
    ],
    [
      'the profile in a second media range',
      `application/json, application/vnd.api+json;profile="${profile}";q=0.9`,
      profile,
    ],
    ['the profile beside an extension', `application/vnd.api+json; ext="${ATOMIC}"; profile="${profile}"`, profile],
  ])('finds %s', (_, header, uri) => {
    expect(requestedCursorProfile(header)).toBe(uri)
  })

  it.each([
    ['no Accept', null],
    ['plain JSON:API', 'application/vnd.api+json'],
    ['another profile', 'application/vnd.api+json; profile="https://example.com/cursor-pagination"'],
    ['the profile on another media type', `application/json; profile="${profile}"`],
    ['the profile refused with q=0', `application/vnd.api+json; profile="${profile}"; q=0, application/vnd.api+json`],
    [
      'the profile as a path of another site',
      `application/vnd.api+json; profile="https://example.com/profiles/ethanresnick/cursor-pagination"`,
    ],
  ])('finds nothing in %s', (_, header) => {
    expect(requestedCursorProfile(header)).toBeNull()
  })
})
