import type { ResourceDescription } from '../../model/description'
import type { IncludePlan, ListQuery, Members, RecordGraph, SearchOrder, StoreFilter } from '../../model/query'
import type { Id, StoredRecord } from '../../model/record'
import type { AtomicOperation, AtomicOutcome, RecordInput, ToManyResult, WriteResult } from '../../model/writes'
import type { ResourceRegistry } from '../../resources/registry'
import type { CatalogueRestore, CatalogueSnapshot } from '../catalogue-copy'
import { StoreUnavailableError } from '../faults'
import type { BookImport, Store } from '../store'
import {
  atomicCall,
  atomicOutcome,
  deleteResult,
  errorOf,
  isWriteReply,
  type WriteCall,
  type WriteRequest,
  type WriteValue,
} from './write-messages'

/** Writes in flight at once from one worker; past this a write fails busy (503) at once. */
const MOST_IN_FLIGHT = 4096

/** The IPC channel to the process that owns the writes. */
export interface WriteChannel {
  send(message: WriteRequest): void
  onMessage(listener: (message: unknown) => void): void
}

interface Waiting {
  resolve: (value: WriteValue) => void
  reject: (error: Error) => void
  timer: ReturnType<typeof setTimeout>
}

/**
 * A worker's store when another process owns the writes (docs/workers.md): reads on the worker's
 * own connection, unconditional writes sent to the owner, whose group commit then batches the
 * writes of every worker together. The owner answers after its COMMIT, which WAL makes visible to
 * this connection at once: a read after the write sees it. Conditional writes (If-Match) run on
 * the local connection: their check is a function, which must run inside the write's transaction.
 */
export class RemoteWritesStore implements Store {
  private seq = 0
  private readonly waiting = new Map<number, Waiting>()

  constructor(
    private readonly local: Store,
    private readonly registry: ResourceRegistry,
    private readonly channel: WriteChannel,
    /** After this the write fails as unavailable: longer than the owner's own BUSY_TIMEOUT wait. */
    private readonly timeoutMs: number,
  ) {
    channel.onMessage((message) => {
      if (!isWriteReply(message)) return
      const waiting = this.waiting.get(message.seq)
      if (!waiting) return
      this.waiting.delete(message.seq)
      clearTimeout(waiting.timer)
      if (message.ok) waiting.resolve(message.value)
      else waiting.reject(errorOf(message.fault))
    })
  }

  /** Fails every write still waiting: the owner is gone. */
  ownerGone(): void {
    for (const [seq, waiting] of this.waiting) {
      this.waiting.delete(seq)
      clearTimeout(waiting.timer)
      waiting.reject(unavailable('the process that owns the writes is gone'))
    }
  }

  private call(call: WriteCall): Promise<WriteValue> {
    if (this.waiting.size >= MOST_IN_FLIGHT) {
      return Promise.reject(
        new StoreUnavailableError(
          'busy',
          'WRITER_BACKLOG',
          `${MOST_IN_FLIGHT} writes are already waiting for the writer`,
        ),
      )
    }
    const seq = ++this.seq
    return new Promise<WriteValue>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(seq)
        reject(unavailable(`the writer did not answer within ${this.timeoutMs} ms`))
      }, this.timeoutMs)
      this.waiting.set(seq, { resolve, reject, timer })
      try {
        this.channel.send({ kind: 'write', seq, call })
      } catch (error) {
        this.waiting.delete(seq)
        clearTimeout(timer)
        reject(unavailable(`cannot reach the writer: ${(error as Error).message}`))
      }
    })
  }

  list(resource: ResourceDescription, query: ListQuery): Promise<StoredRecord[]> {
    return this.local.list(resource, query)
  }
  page(resource: ResourceDescription, query: ListQuery): Promise<{ records: StoredRecord[]; total: number }> {
    return this.local.page(resource, query)
  }
  countUpTo(resource: ResourceDescription, filters: readonly StoreFilter[], cap: number): Promise<number> {
    return this.local.countUpTo(resource, filters, cap)
  }
  matchingIds(resource: ResourceDescription, query: SearchOrder): Promise<Id[]> {
    return this.local.matchingIds(resource, query)
  }
  stream(resource: ResourceDescription, query: SearchOrder, size: number): AsyncIterable<readonly StoredRecord[]> {
    return this.local.stream(resource, query, size)
  }
  find(resource: ResourceDescription, id: Id): Promise<StoredRecord | null> {
    return this.local.find(resource, id)
  }
  findMany(resource: ResourceDescription, ids: readonly Id[]): Promise<StoredRecord[]> {
    return this.local.findMany(resource, ids)
  }
  members(resource: ResourceDescription, relationship: string, owners: readonly Id[]): Promise<Members> {
    return this.local.members(resource, relationship, owners)
  }
  findWithRelated(
    resource: ResourceDescription,
    id: Id,
    plan: IncludePlan,
  ): Promise<{ record: StoredRecord; graph: RecordGraph } | null> {
    return this.local.findWithRelated(resource, id, plan)
  }
  missingReferences(resource: ResourceDescription, toOne: RecordInput['toOne']): Promise<string[]> {
    return this.local.missingReferences(resource, toOne)
  }

  async create(resource: ResourceDescription, input: RecordInput): Promise<WriteResult> {
    return (await this.call({ method: 'create', type: resource.type, input })) as WriteResult
  }

  // With an expectation, on the local connection: the check runs inside the write's transaction.
  readonly update: Store['update'] = async (resource, id, input, options) => {
    if (options?.expect) return this.local.update(resource, id, input, options)
    return (await this.call({ method: 'update', type: resource.type, id, input })) as WriteResult | null
  }

  readonly delete: Store['delete'] = async (resource, id, options) => {
    if (options?.expect) return this.local.delete(resource, id, options)
    return deleteResult(await this.call({ method: 'delete', type: resource.type, id }), this.registry)
  }

  readonly changeToMany: Store['changeToMany'] = async (resource, id, relationship, ids, change, options) => {
    if (options?.expect) return this.local.changeToMany(resource, id, relationship, ids, change, options)
    const call: WriteCall = { method: 'changeToMany', type: resource.type, id, relationship, ids, change }
    return (await this.call(call)) as ToManyResult
  }

  async atomic(operations: readonly AtomicOperation[]): Promise<AtomicOutcome> {
    return atomicOutcome(await this.call(atomicCall(operations)), this.registry)
  }

  version(): Promise<string | null> {
    return this.local.version()
  }
  ready(): Promise<void> {
    return this.local.ready()
  }
  openImport(options: { readonly dryRun: boolean }): BookImport {
    return this.local.openImport(options)
  }
  openSnapshot(): Promise<CatalogueSnapshot> {
    return this.local.openSnapshot()
  }
  openRestore(): CatalogueRestore {
    return this.local.openRestore()
  }
  async close(): Promise<void> {
    this.ownerGone()
    await this.local.close()
  }
}

function unavailable(message: string): StoreUnavailableError {
  return new StoreUnavailableError('unavailable', 'WRITER_UNAVAILABLE', message)
}
