import { describe, expect, it } from 'bun:test'
import { FAULT_LOG_INTERVAL_MS, FaultLog } from '../../src/http/observability/fault-log'
import { createLogger } from '../../src/logger'
import { StoreUnavailableError } from '../../src/store/faults'

/** A FaultLog on a clock the test moves, and the lines it writes. */
function faultLog() {
  const lines: Record<string, unknown>[] = []
  const logger = createLogger('debug', { write: (line) => lines.push(JSON.parse(line)), flush() {} })
  const clock = { now: 1_000_000 }
  return { log: new FaultLog(logger, () => clock.now), lines, clock }
}

const full = () => new StoreUnavailableError('full', 'SQLITE_FULL', 'database or disk is full')
const busy = () => new StoreUnavailableError('busy', 'SQLITE_BUSY', 'database is locked')

describe('FaultLog', () => {
  it('logs a fault when it starts, with its reason, code and message, and not again for each failure', () => {
    const { log, lines } = faultLog()
    for (let i = 0; i < 50; i++) log.failed(full())
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'error',
        msg: 'database unavailable',
        reason: 'full',
        code: 'SQLITE_FULL',
        detail: 'database or disk is full',
        retry_after_s: 5,
      }),
    ])
  })

  it('logs a fault that goes on once more a minute later, with how many requests it has failed', () => {
    const { log, lines, clock } = faultLog()
    log.failed(full())
    for (let i = 0; i < 10; i++) {
      clock.now += FAULT_LOG_INTERVAL_MS / 10 - 1
      log.failed(full())
    }
    expect(lines).toHaveLength(1)
    clock.now += 10
    log.failed(full())
    expect(lines).toHaveLength(2)
    expect(lines[1]).toMatchObject({
      level: 'error',
      msg: 'database still unavailable',
      code: 'SQLITE_FULL',
      failures: 12,
      duration_ms: FAULT_LOG_INTERVAL_MS,
    })
  })

  it('logs a change of cause at once', () => {
    const { log, lines } = faultLog()
    log.failed(full())
    log.failed(busy())
    log.failed(busy())
    expect(lines.map((line) => [line.msg, line.code])).toEqual([
      ['database unavailable', 'SQLITE_FULL'],
      ['database unavailable', 'SQLITE_BUSY'],
    ])
  })

  it('logs a fault that comes back after a quiet minute as a new one', () => {
    const { log, lines, clock } = faultLog()
    log.failed(busy())
    clock.now += FAULT_LOG_INTERVAL_MS
    log.failed(busy())
    expect(lines.map((line) => line.msg)).toEqual(['database unavailable', 'database unavailable'])
  })

  it('logs the end of a fault once, with how many requests failed and for how long', () => {
    const { log, lines, clock } = faultLog()
    log.recovered()
    expect(lines).toEqual([])
    log.failed(full())
    log.failed(full())
    clock.now += 2500
    expect(log.active).toBe(true)
    log.recovered()
    log.recovered()
    expect(log.active).toBe(false)
    expect(lines.slice(1)).toEqual([
      expect.objectContaining({
        level: 'info',
        msg: 'database available again',
        reason: 'full',
        code: 'SQLITE_FULL',
        failures: 2,
        duration_ms: 2500,
      }),
    ])
    log.failed(full())
    expect(lines.at(-1)).toMatchObject({ msg: 'database unavailable' })
  })
})
