/**
 * The load of `bun run bench -- hostile`, in a process of its own so that reading eight large
 * answers does not slow the probe that measures GET one book: `bun bench/parts/limits/hostile-load.ts ORIGIN
 * SECONDS PATH...` runs two connections per path, each sending its request again as soon as the
 * last answer has been read, and prints how many answers it read.
 */
const [origin, seconds, ...paths] = Bun.argv.slice(2)
const until = performance.now() + Number(seconds) * 1000
let answers = 0
await Promise.all(
  paths.flatMap((path) =>
    [0, 1].map(async () => {
      while (performance.now() < until) {
        const response = await fetch(`${origin}${path}`, {
          headers: { accept: 'application/vnd.api+json', 'accept-encoding': 'identity' },
        })
        await response.arrayBuffer()
        answers++
      }
    }),
  ),
)
console.log(answers)
