import { describe, expect, it } from 'bun:test'
import { unlinkedResource, unlinkedResourceJson } from '../../src/jsonapi/document'
import { resources } from '../../src/resources/registry'

describe('unlinkedResourceJson', () => {
  const names = ['Plain', 'Quote " and backslash \\', 'Émile 📚', 'Line\nbreak\ttab', '\u2028\u0000', ' ']
  for (const resource of resources.all) {
    it(`writes exactly the JSON of unlinkedResource for ${resource.type}`, () => {
      for (const [i, name] of names.entries()) {
        const record = { id: i + 1, attributes: { name }, toOne: { author: 3, book_collection: null } }
        const json = unlinkedResourceJson(resource, record)
        expect(json).toBe(JSON.stringify(unlinkedResource(resource, record)))
        expect(JSON.parse(json).attributes.name).toBe(name)
      }
    })
  }
})
