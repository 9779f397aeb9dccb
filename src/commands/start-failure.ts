/** A start-up failure: one line on stderr and exit code 2, never a stack trace. */
export function fail(message: string): never {
  console.error(`catalogue: ${message}`)
  process.exit(2)
}

/** The reason a listen failed, as the system would word it. */
export function listenFailure(error: Error & { code?: string }): string {
  switch (error.code) {
    case 'EADDRINUSE':
      return 'address already in use'
    case 'EACCES':
      return 'permission denied'
    case 'EADDRNOTAVAIL':
      return 'address not available'
    default:
      return error.message
  }
}
