/**
 * `bun run bench`: seeds a temporary database, starts the service and the reference server in
 * their own processes, loads each over loopback from a third process, prints a markdown table and
 * writes it to bench/results.md.
 */
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { compareAnswers } from './compare'
import { MEASURE_MS, pinning, ROUNDS, runScenario, WARMUP_MS, warmUp } from './measure'
import { cpuTable, type ScenarioResult, table, targets } from './report'
import { scenarios } from './scenarios'
import { SEED, seed } from './seed'
import { freePort, type RunningServer, startServer, stopServer, waitUntilReady } from './servers'

function describeRun(service: RunningServer): string {
  const cores = cpus()
  return [
    `Bun ${Bun.version}, ${cores.length} CPU cores (${cores[0]?.model.trim() ?? 'unknown'}), ${new Date().toISOString().slice(0, 10)}.`,
    '',
    `- Data: ${SEED.authors} authors, ${SEED.collections} book collections, ${SEED.books.toLocaleString('en-US')} books, seeded through SqliteStore into a temporary SQLite file (WAL, synchronous=FULL, foreign_keys=ON).`,
    `- Service: \`bun src/cli.ts\` with LOG_LEVEL=info, so it writes one JSON log line per request, as operators run it; its stdout is a pipe the bench reads and discards (${service.loggedLines().toLocaleString('en-US')} lines this run).`,
    '- Reference: bench/reference.ts, plain Bun.serve + prepared bun:sqlite statements, no framework, no logging, on a copy of the same file with the same pragmas; its answers were checked byte for byte against the service before measuring.',
    `- Load: bench/load.ts, a separate Bun process per round, Bun fetch over c keep-alive connections to 127.0.0.1; ${MEASURE_MS / 1000} s measured per scenario and server, in ${ROUNDS} alternating rounds where there is a reference, each after ${WARMUP_MS / 1000} s of warm-up; latency is from sending to the last body byte.`,
    `- Placement: ${pinning.note}. The load generator gets one core, so where it shows ~1 core busy it, not the server, limits req/s (see the CPU table).`,
  ].join('\n')
}

const dir = mkdtempSync(join(tmpdir(), 'catalogue-bench-'))
const servers: RunningServer[] = []

async function cleanUp(): Promise<void> {
  await Promise.all(servers.map(stopServer))
  rmSync(dir, { recursive: true, force: true })
}

// Ctrl-C: stop the servers and remove the files rather than leave them behind.
process.on('SIGINT', () => void cleanUp().finally(() => process.exit(130)))

async function main(): Promise<number> {
  const serviceDb = join(dir, 'service.db')
  const referenceDb = join(dir, 'reference.db')
  const seedStarted = performance.now()
  await seed(serviceDb)
  copyFileSync(serviceDb, referenceDb)
  process.stderr.write(`seeded ${serviceDb} in ${Math.round(performance.now() - seedStarted)} ms\n`)

  const service = startServer(
    'service',
    'src/cli.ts',
    freePort(),
    { HOST: '127.0.0.1', DATABASE_URL: `sqlite://${serviceDb}`, LOG_LEVEL: 'info' },
    pinning.server,
  )
  servers.push(service)
  const reference = startServer(
    'reference',
    'bench/reference.ts',
    freePort(),
    { REFERENCE_DB: referenceDb },
    pinning.server,
  )
  servers.push(reference)
  await Promise.all([waitUntilReady(service, '/api/v1/books/1'), waitUntilReady(reference, '/api/v1/books/1')])
  await compareAnswers(service, reference)
  process.stderr.write('the reference answers byte for byte as the service does; measuring\n')

  await warmUp(service)
  await warmUp(reference)
  const results: ScenarioResult[] = []
  for (const scenario of scenarios) results.push(await runScenario(scenario, service, reference))

  const failed = results.filter((r) => r.service.errors > 0 || (r.reference?.errors ?? 0) > 0)
  const report = [
    '## Benchmark: the service against a framework-free reference',
    '',
    describeRun(service),
    '',
    table(results),
    '',
    '```',
    targets(results),
    '```',
    '',
    'Server CPU time (user + system) per request, warm-up included:',
    '',
    cpuTable(results),
    '',
  ].join('\n')
  console.log(`\n${report}`)
  writeFileSync(join(import.meta.dir, 'results.md'), report)
  if (failed.length > 0) {
    console.error(`requests failed in: ${failed.map((r) => `${r.name} c=${r.concurrency}`).join(', ')}`)
    return 1
  }
  return 0
}

const code = await main().catch((error: Error) => {
  console.error(`bench: ${error.message}`)
  return 1
})
await cleanUp()
process.exit(code)
