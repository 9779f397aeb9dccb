/**
 * The app's routes by pattern, for what is answered without Elysia's router having matched one:
 * the methods a path answers (a 405's Allow) and the template a refused request would have reached
 * (the route label of a 401, 403, 406 or 429, answered before routing).
 */
export class RouteTable {
  private readonly patterns: { readonly path: string; readonly pattern: RegExp; readonly methods: string[] }[] = []

  constructor(routes: readonly { readonly method: string; readonly path: string }[]) {
    const byPath = new Map<string, { path: string; pattern: RegExp; methods: string[] }>()
    for (const route of routes) {
      let entry = byPath.get(route.path)
      if (!entry) {
        const source = route.path.split('/').map((part) => (part.startsWith(':') ? '[^/]+' : RegExp.escape(part)))
        entry = { path: route.path, pattern: new RegExp(`^${source.join('/')}/?$`), methods: [] }
        byPath.set(route.path, entry)
        this.patterns.push(entry)
      }
      entry.methods.push(route.method)
    }
  }

  /** The methods served at `path`; empty when no route has it. */
  methods(path: string): string[] {
    return this.patterns.filter((e) => e.pattern.test(path)).flatMap((e) => e.methods)
  }

  /**
   * The template of the route that serves `method` at `path` (HEAD where GET is), or undefined.
   * A path without a parameter wins over one with (`/api/v1/operations` over `/api/v1/:type`).
   */
  template(method: string, path: string): string | undefined {
    const wanted = method === 'HEAD' ? ['HEAD', 'GET'] : [method]
    let found: string | undefined
    for (const entry of this.patterns) {
      if (!entry.methods.some((m) => wanted.includes(m)) || !entry.pattern.test(path)) continue
      if (!entry.path.includes(':')) return entry.path
      found ??= entry.path
    }
    return found
  }
}
