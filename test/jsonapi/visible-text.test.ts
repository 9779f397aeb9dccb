import { describe, expect, it } from 'bun:test'
import { visibleCharacter, visibleTextPattern } from '../../src/jsonapi/visible-text'

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
