import type { Metric } from 'prom-client'

/** One series: a method, route and status, and its observations counted by bucket. */
interface Series {
  readonly labels: Readonly<Record<'method' | 'route' | 'status', string>>
  /** Not cumulative: counts[i] holds the observations in (bounds[i-1], bounds[i]]. */
  readonly counts: number[]
  sum: number
  count: number
}

/** A sample as prom-client's Registry formats it: `labels` first, then `sharedLabels`. */
interface Sample {
  readonly metricName: string
  readonly labels: Readonly<Record<string, string | number>>
  readonly sharedLabels: Series['labels']
  readonly value: number
}

/**
 * The request latency histogram, kept here rather than by prom-client's Histogram, which hashes
 * and checks the label object on each observation: that cost as much as a single GET's store read.
 * A series is found by one string key and counted in an array. prom-client's Registry formats it
 * when scraped, as it formats its own histograms (it takes any metric with a name and a get()).
 */
export class RequestLatency {
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  private readonly series = new Map<string, Series>()

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
  ) {}

  observe(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`
    let series = this.series.get(key)
    if (!series) {
      series = { labels: { method, route, status: String(status) }, counts: this.bounds.map(() => 0), sum: 0, count: 0 }
      this.series.set(key, series)
    }
    const { bounds } = this
    const { counts } = series
    let bucket = 0
    while (bucket < bounds.length && seconds > (bounds[bucket] as number)) bucket++
    if (bucket < bounds.length) counts[bucket] = (counts[bucket] as number) + 1
    series.sum += seconds
    series.count++
  }

  async get() {
    const bucketName = `${this.name}_bucket`
    const values: Sample[] = []
    for (const { labels, counts, sum, count } of this.series.values()) {
      let cumulative = 0
      this.bounds.forEach((le, i) => {
        cumulative += counts[i] as number
        values.push({ metricName: bucketName, labels: { le }, sharedLabels: labels, value: cumulative })
      })
      values.push({ metricName: bucketName, labels: { le: '+Inf' }, sharedLabels: labels, value: count })
      values.push({ metricName: `${this.name}_sum`, labels: {}, sharedLabels: labels, value: sum })
      values.push({ metricName: `${this.name}_count`, labels: {}, sharedLabels: labels, value: count })
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values }
  }

  /** As prom-client's Registry registers it. */
  asMetric(): Metric {
    return this as unknown as Metric
  }
}
