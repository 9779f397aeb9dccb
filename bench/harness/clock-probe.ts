const JSON_API = 'application/vnd.api+json'

/**
 * GET `path` every 20 ms, whether the last has been answered or not, until `until` settles: the
 * latencies, sorted. Sent on a clock, as other clients would, so that a request sent while the
 * service is held up counts with the whole of its wait (one sent after another only once).
 */
export async function probeOnClock(origin: string, path: string, until: Promise<unknown>): Promise<number[]> {
  let done = false
  void until.finally(() => {
    done = true
  })
  const timed = async () => {
    const sent = performance.now()
    const response = await fetch(origin + path, { headers: { accept: JSON_API } })
    await response.arrayBuffer()
    if (response.status !== 200) throw new Error(`${path} answered ${response.status}`)
    return performance.now() - sent
  }
  const sent: Promise<number>[] = []
  while (!done) {
    sent.push(timed())
    await Bun.sleep(20)
  }
  return (await Promise.all(sent)).sort((a, b) => a - b)
}
