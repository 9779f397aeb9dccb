import { pushUnlinkedResources, resourceJson, unlinkedResourceJson } from '../jsonapi/document'
import type { IncludeTree } from '../jsonapi/query'
import type { ResourceDescription } from '../model/description'
import type { Id, StoredRecord } from '../model/record'
import type { ResourceRegistry } from '../resources/registry'
import { GraphBuilder } from '../store/record-graph'
import type { Store } from '../store/store'
import { IdSet } from './id-set'

/** How many included records are read from the store at a time. */
export const INCLUDED_BATCH = 1000

/** One relationship path of an include tree, and the ids of the records it reached, waiting to be read. */
interface IncludeNode {
  readonly resource: ResourceDescription
  readonly children: readonly (readonly [name: string, node: IncludeNode])[]
  queue: Id[]
  queued: IdSet
}

export interface DocumentRequest {
  readonly registry: ResourceRegistry
  readonly store: Store
  readonly resource: ResourceDescription
  /** Plural type -> the fields to render; a type not named renders all. */
  readonly fields: ReadonlyMap<string, ReadonlySet<string>>
  readonly include: IncludeTree
  /** The relationships whose linkage the primary records render (the include tree's top level, or all). */
  readonly primaryLinks: readonly string[]
}

/**
 * Writes a document a piece at a time: `data` from batches of primary records, then `included`,
 * read path by path in batches of ids, then `tail` (meta and links). Only ids are kept between
 * batches: those already written (so that each record appears once) and those waiting to be read.
 * Each batch is one read: a long answer is not one snapshot, so a record deleted while it is being
 * written can be missing from `included`.
 */
export class DocumentStream {
  private readonly nodes: IncludeNode[] = []
  private readonly root: IncludeNode
  /** For included records of each type: the relationships any path follows from that type. */
  private readonly links = new Map<string, string[]>()
  private readonly written = new Map<string, IdSet>()
  private readonly plain: boolean

  constructor(private readonly request: DocumentRequest) {
    const { registry, resource, include } = request
    const build = (resource: ResourceDescription, tree: IncludeTree): IncludeNode => {
      const children: [string, IncludeNode][] = []
      for (const [name, subtree] of tree) {
        const target = registry.get(resource.relationships[name]?.target ?? '')
        children.push([name, build(target, subtree)])
      }
      return { resource, children, queue: [], queued: new IdSet() }
    }
    this.root = build(resource, include)
    // Breadth first: a path's records are all read before the paths that go on from them.
    for (let level: IncludeNode[] = [this.root]; level.length > 0; ) {
      const next = level.flatMap((node) => node.children.map(([, child]) => child))
      this.nodes.push(...next)
      level = next
    }
    for (const node of this.nodes) {
      const names = new Set(this.links.get(node.resource.type))
      for (const [name] of node.children) names.add(name)
      this.links.set(node.resource.type, [...names])
    }
    this.plain = include.size === 0 && request.primaryLinks.length === 0 && request.fields.size === 0
  }

  /**
   * The whole JSON text of a plain document (no include, no sparse fieldset, no linkage) of the
   * records given, written at once; null for any other document, which `chunks` writes.
   */
  plainText(records: readonly StoredRecord[], tail = '', itemCursor?: (record: StoredRecord) => string): string | null {
    if (!this.plain) return null
    const parts: (string | number)[] = ['{"data":[']
    pushUnlinkedResources(this.request.resource, records, parts, itemCursor)
    parts.push(']', tail, '}')
    return parts.join('')
  }

  /**
   * The document's JSON text in pieces; `one` writes `data` as the single record of the first batch.
   * `itemCursor` gives each primary record of a page its cursor (`meta.page.cursor`).
   */
  async *chunks(
    primary: AsyncIterable<readonly StoredRecord[]> | Iterable<readonly StoredRecord[]>,
    shape: 'many' | 'one',
    tail = '',
    itemCursor?: (record: StoredRecord) => string,
  ): AsyncGenerator<string> {
    const { resource, primaryLinks } = this.request
    // The last piece is held back until the next is known, and what follows it (a closing
    // bracket, meta and links) joins it: a short document is one piece, answered as one string.
    // A piece is gathered as fragments and joined once when it goes: its text is copied once.
    let held: (string | number)[] = [shape === 'many' ? '{"data":[' : '{"data":']
    let holding = false
    let first = true
    const release = (): string => {
      const text = held.join('')
      held = []
      return text
    }
    for await (const records of primary) {
      if (records.length === 0) continue
      // Plain records are about 170 bytes each: a batch of them is one piece.
      if (this.plain) {
        if (holding) yield release()
        if (!first) held.push(',')
        pushUnlinkedResources(resource, records, held, itemCursor)
        first = false
        holding = true
        continue
      }
      for (const group of groups(await this.render(this.root, records, primaryLinks, false, itemCursor))) {
        if (holding) yield release()
        held.push(first ? group : `,${group}`)
        first = false
        holding = true
      }
    }
    if (shape === 'many') held.push(']')
    let included = false
    for (const node of this.nodes) {
      // In id order within a path, as a reader of the document would expect.
      let queue = node.queue.sort((a, b) => a - b)
      node.queue = []
      node.queued = new IdSet()
      // A record written already is read again only to follow paths on from it.
      const written = this.written.get(node.resource.type)
      if (node.children.length === 0 && written) queue = queue.filter((id) => !written.has(id))
      for (let start = 0; start < queue.length; start += INCLUDED_BATCH) {
        const records = await this.request.store.findMany(node.resource, queue.slice(start, start + INCLUDED_BATCH))
        const pieces = await this.render(node, records, this.links.get(node.resource.type) ?? [], true)
        for (const group of groups(pieces)) {
          if (holding) yield release()
          held.push(included ? ',' : ',"included":[', group)
          included = true
          holding = true
        }
      }
    }
    if (included) held.push(']')
    held.push(tail, '}')
    yield release()
  }

  /**
   * Reads the linkage of `links` for a batch, queues what the node's paths reach, and renders the
   * records not written yet (`skipWritten`: included ones; primary records are all written), each
   * with its item cursor when `itemCursor` is given.
   */
  private async render(
    node: IncludeNode,
    records: readonly StoredRecord[],
    links: readonly string[],
    skipWritten = false,
    itemCursor?: (record: StoredRecord) => string,
  ): Promise<string[]> {
    const { registry, store, fields } = this.request
    const { resource } = node
    const graph = new GraphBuilder(resource.type, [])
    for (const name of links) {
      const relationship = resource.relationships[name]
      if (!relationship) continue
      if (relationship.kind === 'to-one') {
        for (const record of records) graph.link(resource.type, record.id, name, record.toOne[name] ?? null)
        continue
      }
      const members = await store.members(
        resource,
        name,
        records.map((r) => r.id),
      )
      for (const record of records) graph.link(resource.type, record.id, name, members.get(record.id) ?? [])
    }
    for (const [name, child] of node.children) {
      for (const record of records) {
        const linkage = graph.linkage(resource.type, record.id, name)
        for (const id of linkage == null ? [] : typeof linkage === 'number' ? [linkage] : linkage) {
          if (child.queued.has(id)) continue
          child.queued.add(id)
          child.queue.push(id)
        }
      }
    }
    let written = this.written.get(resource.type)
    if (!written) {
      written = new IdSet()
      this.written.set(resource.type, written)
    }
    const pieces: string[] = []
    const context = { registry, graph, fields }
    // No linkage and no fieldset: the prepared template, which makes far less garbage per record.
    const plain = links.length === 0 && !fields.has(resource.type)
    for (const record of records) {
      if (skipWritten && written.has(record.id)) continue
      // Primary records are remembered only when something may be included after them.
      if (skipWritten || this.nodes.length > 0) written.add(record.id)
      const cursor = itemCursor?.(record)
      pieces.push(
        plain ? unlinkedResourceJson(resource, record, cursor) : resourceJson(context, resource, record, cursor),
      )
    }
    return pieces
  }
}

/**
 * About this much JSON text goes out in one piece: a batch of records that link thousands each is
 * split, and a batch of plain ones (about 170 KB for 1,000 books) is not, since from a read worker
 * each piece is one round trip.
 */
const PIECE_CHARS = 256 * 1024

/** Resource objects joined by commas, in groups of about PIECE_CHARS. */
function* groups(pieces: readonly string[]): Generator<string> {
  let start = 0
  let size = 0
  for (let i = 0; i < pieces.length; i++) {
    size += (pieces[i] as string).length
    if (size >= PIECE_CHARS || i === pieces.length - 1) {
      yield pieces.slice(start, i + 1).join(',')
      start = i + 1
      size = 0
    }
  }
}
