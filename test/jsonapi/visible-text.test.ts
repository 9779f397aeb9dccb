import { describe, expect, it } from 'bun:test'
import { nameBreaker, namePattern, visibleCharacter, visibleTextPattern } from '../../src/jsonapi/visible-text'

describe('visibleTextPattern', () => {
  it('matches exactly the characters of the Basic Multilingual Plane that visibleCharacter counts as visible', () => {
    // Without the u flag, as TypeBox and most JSON Schema tools compile patterns.
    const pattern = new RegExp(visibleTextPattern)
    const disagreeing: string[] = []
    for (let code = 0; code <= 0xffff; code++) {
      if (code >= 0xd800 && code <= 0xdfff) continue
      const character = String.fromCharCode(code)
      if (pattern.test(character) !== visibleCharacter.test(character)) disagreeing.push(code.toString(16))
    }
    expect(disagreeing).toEqual([])
  })

  it('accepts a name with one visible character among invisible ones, and refuses invisible ones alone', () => {
    const pattern = new RegExp(visibleTextPattern)
    expect(pattern.test('\u200b\u00a0x\u3000')).toBe(true)
    expect(pattern.test('😀')).toBe(true)
    expect(pattern.test(' \u200b\ufeff\u2800\u3164')).toBe(false)
  })
})

describe('namePattern', () => {
  // Without the u flag, as TypeBox and most JSON Schema tools compile patterns.
  const pattern = new RegExp(namePattern)

  it('accepts a name with a visible character and no control character, astral ones included', () => {
    for (const name of ['Émile Zola', 'x\u0301', '\u200bZoë', '😀', 'Ur\u00adsula'])
      expect([name, pattern.test(name)]).toEqual([name, true])
  })

  it('refuses a control character or a line break anywhere, and names of marks or invisible characters alone', () => {
    for (const name of [
      'Zo\u0000la',
      'a\nb',
      'a\r',
      '\u001b[2J',
      'tab\there',
      'Zola\u007f',
      'c1\u0085',
      'ls\u2028x',
      'Zola\n',
    ]) {
      expect([name, pattern.test(name)]).toEqual([name, false])
    }
    for (const name of ['', ' ', '\u0301', '\u0308\u0301', '\u093f\u094d', ' \u200b'])
      expect([name, pattern.test(name)]).toEqual([name, false])
  })

  it('agrees with the service on every single character of the Basic Multilingual Plane', () => {
    const disagreeing: string[] = []
    for (let code = 0; code <= 0xffff; code++) {
      if (code >= 0xd800 && code <= 0xdfff) continue
      const character = String.fromCharCode(code)
      const service = visibleCharacter.test(character) && !nameBreaker.test(character)
      if (pattern.test(character) !== service) disagreeing.push(code.toString(16))
    }
    expect(disagreeing).toEqual([])
  })
})
