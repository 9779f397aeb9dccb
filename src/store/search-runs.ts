import type { Conjunction, SearchAnswer, SearchRead } from './search-ranking'
import type { NearRequest, RelatedRequest, SearchTerm } from './search-terms'

/**
 * Runs a search's plan (src/store/search-ranking.ts: a generator of reads) against a backend's
 * reads: at once on SQLite, inside its read transaction; awaited one after another on PostgreSQL,
 * in its snapshot.
 */

/** A backend's answers to ranking's reads: at once (SQLite) or promised (PostgreSQL). */
export interface SearchReads<T> {
  near(requests: readonly NearRequest[]): T
  related(requests: readonly RelatedRequest[]): T
  count(terms: readonly SearchTerm[], cap: number): T
  matches(terms: readonly SearchTerm[]): T
  first(conjunction: Conjunction, limit: number): T
}

function answer<T>(read: SearchRead, reads: SearchReads<T>): T {
  switch (read.kind) {
    case 'near':
      return reads.near(read.requests)
    case 'related':
      return reads.related(read.requests)
    case 'count':
      return reads.count(read.terms, read.cap)
    case 'matches':
      return reads.matches(read.terms)
    case 'first':
      return reads.first(read.conjunction, read.limit)
  }
}

/** Runs ranking whose reads answer at once (SQLite, inside its read transaction). */
export function rankSync<T>(plan: Generator<SearchRead, T, SearchAnswer>, reads: SearchReads<SearchAnswer>): T {
  let step = plan.next()
  while (!step.done) step = plan.next(answer(step.value, reads))
  return step.value
}

/** Runs ranking whose reads are awaited, one after another (PostgreSQL). */
export async function rankAsync<T>(
  plan: Generator<SearchRead, T, SearchAnswer>,
  reads: SearchReads<Promise<SearchAnswer>>,
): Promise<T> {
  let step = plan.next()
  while (!step.done) step = plan.next(await answer(step.value, reads))
  return step.value
}
