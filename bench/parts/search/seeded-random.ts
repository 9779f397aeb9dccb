/**
 * The seeded randomness of the search bench (bench/parts/search/): the catalogue it generates and the
 * queries it draws from it must come out the same for the same seed on every machine and run, so
 * nothing here reads Math.random.
 */

/** A number in [0, 1). */
export type Random = () => number

/** mulberry32: small, fast, and the same sequence everywhere for a 32-bit seed. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** A whole number in [0, n). */
export const below = (random: Random, n: number): number => Math.floor(random() * n)

export function pick<T>(random: Random, items: readonly T[]): T {
  const item = items[below(random, items.length)]
  if (item === undefined) throw new Error('pick from an empty list')
  return item
}

/** A copy of `items` in a seeded order (Fisher-Yates). */
export function shuffled<T>(random: Random, items: readonly T[]): T[] {
  const copy = [...items]
  for (let i = copy.length - 1; i > 0; i--) {
    const j = below(random, i + 1)
    const a = copy[i] as T
    copy[i] = copy[j] as T
    copy[j] = a
  }
  return copy
}

/** Draws an index in [0, weights.length) with probability proportional to its weight. */
export function weightedSampler(weights: ArrayLike<number>): (random: Random) => number {
  const cumulative = new Float64Array(weights.length)
  let sum = 0
  for (let i = 0; i < weights.length; i++) {
    sum += weights[i] ?? 0
    cumulative[i] = sum
  }
  return (random) => {
    const target = random() * sum
    let low = 0
    let high = cumulative.length - 1
    while (low < high) {
      const middle = (low + high) >> 1
      if ((cumulative[middle] ?? 0) > target) high = middle
      else low = middle + 1
    }
    return low
  }
}

/**
 * Ranks in [0, n) with Zipf's frequencies: rank k drawn in proportion to 1 / (k + 1)^exponent, so
 * a few are very common and most are rare, as words, authors and series are in a real catalogue.
 */
export function zipfSampler(n: number, exponent: number): (random: Random) => number {
  return weightedSampler(Float64Array.from({ length: n }, (_, k) => 1 / (k + 1) ** exponent))
}
