import type { ResourceRegistry } from '../../resources/registry'
import type { Store } from '../store'
import { faultOf, perform, type WriteReply, type WriteRequest } from './write-messages'

/**
 * Answers a worker's write with the owner's store (see remote-writes.ts). Calls of every worker
 * made within one event-loop turn join one group commit there. `reply` is not called once the
 * worker has gone.
 */
export function answerWrite(
  store: Store,
  registry: ResourceRegistry,
  request: WriteRequest,
  reply: (message: WriteReply) => void,
): void {
  perform(store, registry, request.call).then(
    (value) => reply({ kind: 'written', seq: request.seq, ok: true, value }),
    (error: unknown) => reply({ kind: 'written', seq: request.seq, ok: false, fault: faultOf(error) }),
  )
}
