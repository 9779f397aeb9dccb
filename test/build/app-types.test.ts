import { describe, expect, it } from 'bun:test'
import { API_TYPES_PATH, apiTypes } from '../../app/tools/api-types'

describe("the app's types of the API", () => {
  it('are those the OpenAPI document gives today (`bun run app:types` writes them)', async () => {
    expect(await Bun.file(API_TYPES_PATH).text()).toBe(await apiTypes())
  })
})
