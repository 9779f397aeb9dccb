import { describe, expect, it } from 'bun:test'
import type { ResourceDescription, ToOneRelationship } from '../../src/model/description'
import type { IncludePlan, RecordGraph } from '../../src/model/query'
import type { Id, StoredRecord } from '../../src/model/record'
import { ResourceRegistry } from '../../src/resources/registry'
import {
  followPlan,
  followSync,
  followsOnlyToOne,
  GraphBuilder,
  type GraphRead,
  toOneGraph,
} from '../../src/store/record-graph'

const toOne = (column: string): ToOneRelationship => ({
  kind: 'to-one',
  target: 'people',
  column,
  required: false,
  idAttribute: column,
  onTargetDelete: 'nullify',
  description: column,
})

/** A type whose two to-one relationships reach the same type as itself: both may reach one record, or itself. */
const people: ResourceDescription = {
  type: 'people',
  singular: 'person',
  title: 'Person',
  table: 'people',
  attributes: {},
  relationships: { mentor: toOne('mentor_id'), manager: toOne('manager_id') },
  filters: {},
  plainFilters: {},
  sortable: [],
  defaultInclude: ['mentor', 'manager'],
}
const registry = new ResourceRegistry([people])

const person = (id: Id, mentor: Id | null, manager: Id | null): StoredRecord => ({
  id,
  attributes: {},
  toOne: { mentor, manager },
})
const stored = new Map<Id, StoredRecord>([
  [1, person(1, 2, 2)],
  [2, person(2, 2, null)],
  [3, person(3, 99, 1)],
])
const find = (_type: string, id: Id) => stored.get(id) ?? null

const leaf = { include: true, children: new Map() }
const both: IncludePlan = new Map([
  ['mentor', leaf],
  ['manager', leaf],
])

/** The graph as the general traversal builds it. */
function traversed(record: StoredRecord, plan: IncludePlan): RecordGraph {
  const graph = new GraphBuilder('people', [record.id])
  followSync(followPlan(registry, people, [record], plan, graph), (read: GraphRead) =>
    read.kind === 'records' ? read.ids.flatMap((id) => stored.get(id) ?? []) : new Map(),
  )
  return graph
}

function shape(record: StoredRecord, graph: RecordGraph) {
  return {
    included: graph.included.map((entry) => `${entry.resource.type}:${entry.record.id}`),
    mentor: graph.linkage('people', record.id, 'mentor'),
    manager: graph.linkage('people', record.id, 'manager'),
    another: graph.linkage('people', 999, 'mentor'),
  }
}

describe('toOneGraph', () => {
  it('gives what the general traversal gives: a record reached twice included once, the record itself never, a missing one not', () => {
    for (const record of stored.values()) {
      for (const plan of [both, new Map([['manager', { include: false, children: new Map() }]]) as IncludePlan]) {
        expect(shape(record, toOneGraph(registry, people, record, plan, find))).toEqual(
          shape(record, traversed(record, plan)),
        )
      }
    }
    const first = stored.get(1) as StoredRecord
    expect(shape(first, toOneGraph(registry, people, first, both, find)).included).toEqual(['people:2'])
    const second = stored.get(2) as StoredRecord
    expect(toOneGraph(registry, people, second, both, find).included).toEqual([])
  })

  it('applies only to plans of to-one relationships with nothing below them', () => {
    expect(followsOnlyToOne(people, both)).toBe(true)
    expect(followsOnlyToOne(people, new Map([['mentor', { include: true, children: both }]]))).toBe(false)
  })
})
