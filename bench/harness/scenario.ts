/**
 * What a part of the bench measures and what it gets back: a Scenario (a request plan at a
 * concurrency, and the servers it runs on) and its ScenarioResult. Types and the two common
 * concurrencies only, so that the harness and every part can share them without importing a part.
 */
import type { Durability } from '../../src/store/sqlite/open-database'
import type { LoadPlan, LoadSummary } from './load'

/**
 * The baselines beyond the raw reference (bench/references/raw.ts) a scenario can be measured beside:
 * `whole`, the raw reference writing the unpaginated lists whole (the raw reference proper streams
 * them in the comparison); `grouped`, the raw reference committing writes in groups as the service
 * does (the raw reference proper commits each alone); `elysia`, the minimal Elysia app; `express`,
 * Express + jsonapi-serializer.
 */
export type BaselineName = 'whole' | 'grouped' | 'elysia' | 'express'

/** What issue 10 holds a scenario to (bench/parts/comparison/targets.ts); none where absent. */
export type Target = { readonly kind: 'read' } | { readonly kind: 'write'; readonly durability: Durability }

export interface Scenario {
  readonly name: string
  readonly concurrency: number
  /** Also run against the raw reference server, which has a route for it that renders the same bytes. */
  readonly withReference: boolean
  /** Further baselines to run it against, where the part of the bench started them. */
  readonly baselines?: readonly BaselineName[]
  readonly target?: Target
  /** How many ids its `{next}` sequence has (the books a DELETE run may delete). */
  readonly sequenceCount?: number
  readonly plan: Pick<LoadPlan, 'method' | 'path' | 'body' | 'randomMax' | 'expectStatus' | 'sequenceFrom'>
}

export type Plan = Scenario['plan']

/** One server's figures in a scenario: its load summary and its CPU per request. */
export interface Measurement {
  readonly load: LoadSummary
  readonly cpuUs: number | undefined
}

export interface ScenarioResult {
  readonly name: string
  readonly concurrency: number
  /** What issue 10 holds it to, if anything. */
  readonly target?: Target
  readonly service: LoadSummary
  /** The raw reference (for the unpaginated lists of the comparison: streaming them). */
  readonly reference?: LoadSummary
  /** Server CPU time (user + system) per answered request, in microseconds, where /proc has it. */
  readonly serviceCpuUs?: number
  readonly referenceCpuUs?: number
  /** The other baselines it was measured beside. */
  readonly baselines?: Partial<Record<BaselineName, Measurement>>
}

/** The 100,000-book data set's scenarios (and the warm-ups): moderate load. */
export const MODERATE_CONCURRENCY = 16
/** The connections of the backend × workers part: the "p99 under 20 ms at 32 connections". */
export const WORKERS_CONCURRENCY = 32
