import { type ItemMetaMembers, pushResource, pushUnlinkedResource, pushUnlinkedResources } from '../../jsonapi/document'
import type { IncludeTree } from '../../jsonapi/query-selection'
import type { ResourceDescription } from '../../model/description'
import type { Members } from '../../model/query'
import type { StoredRecord } from '../../model/record'
import type { ResourceRegistry } from '../../resources/registry'
import { GraphBuilder } from '../../store/record-graph'
import type { Store } from '../../store/store'
import { IdSet } from './id-set'

/** How many included records are read from the store at a time. */
export const INCLUDED_BATCH = 1000

/** One relationship path of an include tree, and the ids of the records it reached, waiting to be read. */
interface IncludeNode {
  readonly resource: ResourceDescription
  readonly children: readonly (readonly [name: string, node: IncludeNode])[]
  /** The ids reached, in a set that gives them in order. */
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
  /**
   * The request named `include`: the document is a compound one, with `included` even when it is
   * empty (JSON:API 1.1, "Inclusion of Related Resources"). Without it, `included` is written only
   * when a default include found something, as the catalogue always answered.
   */
  readonly compound: boolean
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
      return { resource, children, queued: new IdSet() }
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
    this.plain =
      include.size === 0 && request.primaryLinks.length === 0 && request.fields.size === 0 && !request.compound
  }

  /**
   * The whole JSON text of a plain document (no include, no sparse fieldset, no linkage) of the
   * records given, written at once; null for any other document, which `chunks` writes.
   */
  plainText(records: readonly StoredRecord[], tail = '', itemMeta?: ItemMetaMembers): string | null {
    if (!this.plain) return null
    const parts: (string | number)[] = ['{"data":[']
    pushUnlinkedResources(this.request.resource, records, parts, itemMeta)
    parts.push(']', tail, '}')
    return parts.join('')
  }

  /**
   * The document's JSON text in pieces; `one` writes `data` as the single record of the first batch.
   * `itemMeta` gives each primary record of a page its meta (its cursor, `meta.page.cursor`; a search's matches).
   */
  async *chunks(
    primary: AsyncIterable<readonly StoredRecord[]> | Iterable<readonly StoredRecord[]>,
    shape: 'many' | 'one',
    tail = '',
    itemMeta?: ItemMetaMembers,
  ): AsyncGenerator<string> {
    const { resource, primaryLinks } = this.request
    // A piece is gathered as fragments and joined once when it goes: its text is copied once, and
    // no record's text is a string of its own. It goes only once more is known to follow, and what
    // ends the document (a closing bracket, meta and links) joins the last: a short document is
    // one piece, answered as one string.
    const piece = new Piece(shape === 'many' ? '{"data":[' : '{"data":')
    let first = true
    for await (const records of primary) {
      if (records.length === 0) continue
      // Plain records are about 170 bytes each: a batch of them is one piece.
      if (this.plain) {
        if (piece.chars > 0) yield piece.release()
        if (!first) piece.parts.push(',')
        pushUnlinkedResources(resource, records, piece.parts, itemMeta)
        first = false
        piece.chars = PIECE_CHARS
        continue
      }
      const linkage = primaryLinks.length === 0 ? noLinkage : await this.linkage(this.root, records, primaryLinks)
      const write = this.writer(this.root, records, linkage, itemMeta)
      for (let at = 0; at < records.length; ) {
        if (piece.chars >= PIECE_CHARS) yield piece.release()
        at = piece.fill(records, at, write)
      }
    }
    if (shape === 'many') piece.parts.push(']')
    if (this.nodes.length > 0 || this.request.compound) yield* this.included(piece)
    piece.parts.push(tail, '}')
    yield piece.release()
  }

  /**
   * Writes `included` into the piece, path by path, a batch of ids at a time, yielding each piece
   * that fills up. Its own generator: the one entered for every piece of a long `included` is
   * this, smaller than the whole of `chunks` for the optimizing compilers to take.
   */
  private async *included(piece: Piece): AsyncGenerator<string> {
    piece.next = INCLUDED_OPENING
    for (const node of this.nodes) {
      // In id order within a path, as a reader of the document would expect: the set gives its ids
      // in order, so they are never all held in a list.
      const queued = node.queued
      node.queued = new IdSet()
      // A record written already is read again only to follow paths on from it.
      const written = this.writtenOf(node.resource.type)
      const skip = node.children.length === 0 ? written : undefined
      const links = this.links.get(node.resource.type) ?? []
      for (const ids of queued.batches(INCLUDED_BATCH, skip)) {
        const records = await this.request.store.findMany(node.resource, ids)
        const linkage = links.length === 0 ? noLinkage : await this.linkage(node, records, links)
        const write = this.writer(node, records, linkage)
        for (let at = 0; at < records.length; ) {
          if (piece.chars >= PIECE_CHARS) yield piece.release()
          at = piece.fill(records, at, write, written)
        }
      }
    }
    // Something was included once the opening has been written.
    if (piece.next !== INCLUDED_OPENING) piece.parts.push(']')
    else if (this.request.compound) piece.parts.push(INCLUDED_OPENING, ']')
  }

  /** The ids of the records of `type` written so far. */
  private writtenOf(type: string): IdSet {
    let written = this.written.get(type)
    if (!written) {
      written = new IdSet()
      this.written.set(type, written)
    }
    return written
  }

  /** The members of each to-many relationship of `links` for a batch, by name: one read each. */
  private async linkage(
    node: IncludeNode,
    records: readonly StoredRecord[],
    links: readonly string[],
  ): Promise<ReadonlyMap<string, Members | null>> {
    const read = new Map<string, Members | null>()
    for (const name of links) {
      const relationship = node.resource.relationships[name]
      if (!relationship) continue
      const owners = relationship.kind === 'to-many' ? records.map((r) => r.id) : null
      read.set(name, owners ? await this.request.store.members(node.resource, name, owners) : null)
    }
    return read
  }

  /**
   * Links a batch's records as `linkage` read them (null: a to-one, held by each record) and
   * queues what the node's paths reach; gives the writer of the batch's records, each with its item
   * meta when `itemMeta` is given, which remembers each record it writes. Synchronous, apart
   * from the reads: its loops over every record and id are compiled small, away from the stream.
   */
  private writer(
    node: IncludeNode,
    records: readonly StoredRecord[],
    linkage: ReadonlyMap<string, Members | null>,
    itemMeta?: ItemMetaMembers,
  ): (record: StoredRecord, parts: (string | number)[]) => void {
    const { registry, fields } = this.request
    const { resource } = node
    const graph = new GraphBuilder(resource.type, [])
    linkBatch(graph, resource.type, records, linkage)
    for (const [name, child] of node.children) queueReached(graph, resource.type, records, name, child.queued)
    const written = this.writtenOf(resource.type)
    // Primary records are remembered only when something may be included after them.
    const remember = node !== this.root || this.nodes.length > 0
    const context = { registry, graph, fields }
    // No linkage and no fieldset: the prepared template, which makes far less garbage per record.
    const plain = linkage.size === 0 && !fields.has(resource.type)
    return (record, parts) => {
      if (remember) written.add(record.id)
      const meta = itemMeta?.(record)
      if (plain) pushUnlinkedResource(resource, record, parts, meta)
      else pushResource(context, resource, record, parts, meta)
    }
  }
}

/** The linkage of a batch that follows no relationship. */
const noLinkage: ReadonlyMap<string, Members | null> = new Map()

/** Links each record of a batch: a to-one (members null) as the record holds it, a to-many as read. */
function linkBatch(
  graph: GraphBuilder,
  type: string,
  records: readonly StoredRecord[],
  linkage: ReadonlyMap<string, Members | null>,
): void {
  for (const [name, members] of linkage) {
    if (members === null) for (const record of records) graph.link(type, record.id, name, record.toOne[name] ?? null)
    else for (const record of records) graph.link(type, record.id, name, members.get(record.id) ?? [])
  }
}

/** Queues the ids that relationship `name` of a batch's records reaches, for the path that follows it. */
function queueReached(
  graph: GraphBuilder,
  type: string,
  records: readonly StoredRecord[],
  name: string,
  queued: IdSet,
): void {
  for (const record of records) {
    const reached = graph.linkage(type, record.id, name)
    if (reached == null) continue
    if (typeof reached === 'number') queued.add(reached)
    else for (const id of reached) queued.add(id)
  }
}

/** What opens `included`, before its first record. */
const INCLUDED_OPENING = ',"included":['

/**
 * About this much JSON text goes out in one piece: the records of a batch that link thousands each
 * go in several. Measured at 100,000 books (/authors?include=books, 20 MB), 64 KB pieces against
 * 256 KB: some 7 MiB less at the peak (larger strings and their bytes linger until the allocator
 * returns them) and the answer several times sooner, though each piece from a read worker is one
 * round trip. A batch of plain records (about 170 KB for 1,000 books) still goes in one.
 */
const PIECE_CHARS = 64 * 1024

/** The fragments of the piece being gathered, and about how many characters they hold. */
class Piece {
  parts: (string | number)[]
  chars = 0
  /** What goes before the next record: nothing before the first, a comma between. */
  next = ''

  constructor(opening: string) {
    this.parts = [opening]
  }

  /** Adds the characters of the fragments from `from` on (a number's, about). */
  count(from: number): void {
    const { parts } = this
    for (let i = from; i < parts.length; i++) {
      const part = parts[i] as string | number
      this.chars += typeof part === 'string' ? part.length : 8
    }
  }

  /**
   * Writes records from `at` on, leaving out those `skip` holds, until the piece is full; gives
   * where it stopped. The loop over every record is here, not in the stream's generator, so that
   * only this small function is compiled for it.
   */
  fill(
    records: readonly StoredRecord[],
    at: number,
    write: (record: StoredRecord, parts: (string | number)[]) => void,
    skip?: IdSet,
  ): number {
    const { parts } = this
    for (; at < records.length && this.chars < PIECE_CHARS; at++) {
      const record = records[at] as StoredRecord
      if (skip?.has(record.id)) continue
      const from = parts.length
      parts.push(this.next)
      write(record, parts)
      this.next = ','
      this.count(from)
    }
    return at
  }

  release(): string {
    const text = this.parts.join('')
    this.parts = []
    this.chars = 0
    return text
  }
}
