import { describe, expect, it } from 'bun:test'
import { availableParallelism } from 'node:os'
import { type Config, ConfigError, helpText, parseConfig } from '../src/config'
import { settingNames, settings } from '../src/config/table'

/** parseConfig for a run that must succeed. */
function configOf(argv: string[], env: Record<string, string | undefined> = {}): Config {
  const parsed = parseConfig(argv, env)
  if (parsed === 'help') throw new Error('expected a configuration, got help')
  return parsed
}

/** The ConfigError that parseConfig throws for these settings. */
function errorOf(argv: string[], env: Record<string, string | undefined> = {}): ConfigError {
  try {
    parseConfig(argv, env)
  } catch (error) {
    if (error instanceof ConfigError) return error
    throw new Error(`expected a ConfigError, got ${String(error)}`)
  }
  throw new Error('expected a ConfigError, but parseConfig succeeded')
}

describe('parseConfig defaults', () => {
  it('listens on 0.0.0.0:3000 with sqlite://data/catalogue.db, info logs and a 1 MiB body limit', () => {
    const config = configOf([], {})
    expect(config.port).toBe(3000)
    expect(config.host).toBe('0.0.0.0')
    expect(config.databaseUrl).toBe('sqlite://data/catalogue.db')
    expect(config.database).toEqual({ kind: 'sqlite', path: 'data/catalogue.db' })
    expect(config.logLevel).toBe('info')
    expect(config.maxBodyBytes).toBe(1024 * 1024)
  })

  it('ignores environment variables it does not know', () => {
    expect(configOf([], { HOME: '/root', UNRELATED: 'x' }).port).toBe(3000)
  })
})

describe('parseConfig from the environment', () => {
  it('reads PORT, HOST, DATABASE_URL, LOG_LEVEL and MAX_BODY_BYTES', () => {
    const config = configOf([], {
      PORT: '8080',
      HOST: '127.0.0.1',
      DATABASE_URL: 'sqlite://other/place.db',
      LOG_LEVEL: 'debug',
      MAX_BODY_BYTES: '2048',
    })
    expect(config.port).toBe(8080)
    expect(config.host).toBe('127.0.0.1')
    expect(config.databaseUrl).toBe('sqlite://other/place.db')
    expect(config.database).toEqual({ kind: 'sqlite', path: 'other/place.db' })
    expect(config.logLevel).toBe('debug')
    expect(config.maxBodyBytes).toBe(2048)
  })

  it('accepts PORT=0 (a free port) and PORT=65535', () => {
    expect(configOf([], { PORT: '0' }).port).toBe(0)
    expect(configOf([], { PORT: '65535' }).port).toBe(65535)
  })

  it('accepts every log level: debug, info, warn, error, silent', () => {
    for (const level of ['debug', 'info', 'warn', 'error', 'silent']) {
      expect(configOf([], { LOG_LEVEL: level }).logLevel).toBe(level as Config['logLevel'])
    }
  })
})

describe('parseConfig command-line flags', () => {
  it('take "--flag value" form', () => {
    const config = configOf([
      '--port',
      '4000',
      '--host',
      '127.0.0.1',
      '--database-url',
      'sqlite://:memory:',
      '--log-level',
      'warn',
      '--max-body-bytes',
      '100',
    ])
    expect(config.port).toBe(4000)
    expect(config.host).toBe('127.0.0.1')
    expect(config.database).toEqual({ kind: 'sqlite', path: ':memory:' })
    expect(config.logLevel).toBe('warn')
    expect(config.maxBodyBytes).toBe(100)
  })

  it('take "--flag=value" form', () => {
    const config = configOf([
      '--port=4001',
      '--host=localhost',
      '--database-url=sqlite:///tmp/x.db',
      '--log-level=error',
      '--max-body-bytes=200',
    ])
    expect(config.port).toBe(4001)
    expect(config.host).toBe('localhost')
    expect(config.database).toEqual({ kind: 'sqlite', path: '/tmp/x.db' })
    expect(config.logLevel).toBe('error')
    expect(config.maxBodyBytes).toBe(200)
  })

  it('keeps "=" inside a --flag=value value', () => {
    expect(configOf(['--database-url=sqlite://a=b.db']).database).toEqual({ kind: 'sqlite', path: 'a=b.db' })
  })

  it('win over the environment', () => {
    const env = { PORT: '1111', HOST: '10.0.0.1', DATABASE_URL: 'sqlite://env.db', LOG_LEVEL: 'debug' }
    const config = configOf(
      ['--port', '2222', '--host=127.0.0.1', '--database-url', 'sqlite://flag.db', '--log-level=silent'],
      env,
    )
    expect(config.port).toBe(2222)
    expect(config.host).toBe('127.0.0.1')
    expect(config.databaseUrl).toBe('sqlite://flag.db')
    expect(config.logLevel).toBe('silent')
  })

  it('win over a bad environment value', () => {
    expect(configOf(['--port', '5000'], { PORT: 'abc' }).port).toBe(5000)
  })

  it('leave unset settings to the environment', () => {
    const config = configOf(['--port', '2222'], { HOST: '127.0.0.1' })
    expect(config.port).toBe(2222)
    expect(config.host).toBe('127.0.0.1')
  })
})

describe('parseConfig --help', () => {
  it("returns 'help' for --help", () => {
    expect(parseConfig(['--help'], {})).toBe('help')
  })

  it("returns 'help' for -h", () => {
    expect(parseConfig(['-h'], {})).toBe('help')
  })

  it("returns 'help' even when other settings are bad", () => {
    expect(parseConfig(['--port', '1', '--help'], { PORT: 'abc', LOG_LEVEL: 'loud' })).toBe('help')
  })

  it('documents every option and its environment variable', () => {
    for (const word of ['--port', 'PORT', '--host', 'HOST', '--database-url', 'DATABASE_URL', '--log-level']) {
      expect(helpText).toContain(word)
    }
    expect(helpText).toContain('LOG_LEVEL')
    expect(helpText).toContain('--help')
  })
})

describe('parseConfig bad values', () => {
  it.each(['abc', '70000', '-1', '3.5', '', '65536'])('rejects PORT=%p naming PORT and the value', (value) => {
    const error = errorOf([], { PORT: value })
    expect(error.message).toContain('PORT')
    expect(error.message).toContain(`"${value}"`)
  })

  it('rejects --port abc like PORT=abc', () => {
    expect(errorOf(['--port', 'abc']).message).toContain('PORT must be an integer from 0 to 65535 (got "abc")')
  })

  it('rejects LOG_LEVEL=loud listing the accepted levels', () => {
    const message = errorOf([], { LOG_LEVEL: 'loud' }).message
    expect(message).toContain('LOG_LEVEL')
    expect(message).toContain('"loud"')
    for (const level of ['debug', 'info', 'warn', 'error', 'silent']) expect(message).toContain(level)
  })

  it('rejects DATABASE_URL=mysql://x naming the accepted schemes', () => {
    const message = errorOf([], { DATABASE_URL: 'mysql://x' }).message
    expect(message).toContain('DATABASE_URL')
    expect(message).toContain('sqlite://')
    expect(message).toContain('postgres://')
    expect(message).toContain('mysql://x')
  })

  it('rejects DATABASE_URL=sqlite:// without a path', () => {
    const message = errorOf([], { DATABASE_URL: 'sqlite://' }).message
    expect(message).toContain('DATABASE_URL')
    expect(message).toContain('path')
  })

  it.each([
    'postgres://postgres@127.0.0.1:5432/',
    'postgres://postgres@127.0.0.1:5432',
    'postgresql://db.example',
    'postgres://catalogue@db.example:5432/?sslmode=disable',
    'postgres://catalogue@db.example:5432/?dbname=',
  ])('rejects DATABASE_URL=%p, which names no database, saying so', (url) => {
    const message = errorOf([], { DATABASE_URL: url }).message
    expect(message).toStartWith(`DATABASE_URL ${url} names no database: add its name after the host`)
    expect(message).toContain('postgres maintenance database')
  })

  it('rejects a postgres:// DATABASE_URL that names no database without showing its password', () => {
    const message = errorOf([], { DATABASE_URL: 'postgres://catalogue:s3cret@db.example:5432/' }).message
    expect(message).toStartWith('DATABASE_URL postgres://catalogue:***@db.example:5432/ names no database')
    expect(message).not.toContain('s3cret')
  })

  it('rejects a postgres:// DATABASE_URL that is not a URL, saying what to encode and not showing it', () => {
    const message = errorOf([], { DATABASE_URL: 'postgres://catalogue:pa#ss@db.example/catalogue' }).message
    expect(message).toBe(
      'DATABASE_URL is not a valid postgres:// URL: percent-encode the characters @ : / ? # % in the user name and password (@ as %40)',
    )
  })

  it('rejects an empty HOST', () => {
    expect(errorOf([], { HOST: ' ' }).message).toContain('HOST')
  })

  it.each(['0', 'lots', String(1024 ** 3 + 1)])('rejects MAX_BODY_BYTES=%p', (value) => {
    expect(errorOf([], { MAX_BODY_BYTES: value }).message).toContain('MAX_BODY_BYTES')
  })

  it('rejects an unknown flag, naming it and pointing at --help', () => {
    const message = errorOf(['--colour', 'blue']).message
    expect(message).toContain('--colour')
    expect(message).toContain('--help')
  })

  it('rejects a bare positional argument as an unknown option', () => {
    expect(errorOf(['serve']).message).toContain('"serve"')
  })

  it('rejects a flag without a value', () => {
    expect(errorOf(['--port']).message).toBe('--port needs a value')
  })

  it('rejects a flag at the end of the line without a value after valid flags', () => {
    expect(errorOf(['--host', '127.0.0.1', '--database-url']).message).toContain('--database-url needs a value')
  })

  it('gives one-line messages', () => {
    const cases: [string[], Record<string, string>][] = [
      [[], { PORT: 'abc' }],
      [[], { LOG_LEVEL: 'loud' }],
      [[], { DATABASE_URL: 'mysql://x' }],
      [[], { DATABASE_URL: 'sqlite://' }],
      [[], { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/' }],
      [['--nope'], {}],
      [['--port'], {}],
    ]
    for (const [argv, env] of cases) expect(errorOf(argv, env).message).not.toContain('\n')
  })
})

describe('parseConfig DATABASE_URL forms', () => {
  it('reads sqlite:///abs/path.db as the absolute path /abs/path.db', () => {
    expect(configOf([], { DATABASE_URL: 'sqlite:///abs/path.db' }).database).toEqual({
      kind: 'sqlite',
      path: '/abs/path.db',
    })
  })

  it('reads sqlite://relative/path.db as a relative path', () => {
    expect(configOf([], { DATABASE_URL: 'sqlite://relative/path.db' }).database).toEqual({
      kind: 'sqlite',
      path: 'relative/path.db',
    })
  })

  it('reads sqlite://:memory: as an in-memory database', () => {
    expect(configOf([], { DATABASE_URL: 'sqlite://:memory:' }).database).toEqual({ kind: 'sqlite', path: ':memory:' })
  })

  it('reads postgres:// and postgresql:// URLs as postgres, keeping the whole URL', () => {
    const url = 'postgres://user:pw@db.example:5432/catalogue'
    expect(configOf([], { DATABASE_URL: url }).database).toEqual({ kind: 'postgres', url })
    const long = 'postgresql://localhost/catalogue'
    expect(configOf([], { DATABASE_URL: long }).database).toEqual({ kind: 'postgres', url: long })
    for (const named of ['postgres://u@localhost/?dbname=catalogue', 'postgres://u@localhost?database=catalogue']) {
      expect(configOf([], { DATABASE_URL: named }).database).toEqual({ kind: 'postgres', url: named })
    }
  })
})

describe('parseConfig DATA_DIR', () => {
  it('puts the default database, catalogue.db, in the data folder, relative or absolute', () => {
    expect(configOf([], {}).dataDir).toBe('data')
    expect(configOf([], { DATA_DIR: '/var/lib/catalogue' })).toMatchObject({
      dataDir: '/var/lib/catalogue',
      databaseUrl: 'sqlite:///var/lib/catalogue/catalogue.db',
      database: { kind: 'sqlite', path: '/var/lib/catalogue/catalogue.db' },
    })
    expect(configOf(['--data-dir', 'state'], { DATA_DIR: '/ignored' }).databaseUrl).toBe('sqlite://state/catalogue.db')
  })

  it('leaves a DATABASE_URL that is set as it is', () => {
    expect(configOf([], { DATA_DIR: '/var/lib/catalogue', DATABASE_URL: 'sqlite://elsewhere.db' }).databaseUrl).toBe(
      'sqlite://elsewhere.db',
    )
  })

  it('refuses an empty DATA_DIR', () => {
    expect(errorOf([], { DATA_DIR: ' ' }).message).toBe('DATA_DIR must not be empty')
  })
})

describe('parseConfig BUSY_TIMEOUT', () => {
  it('waits 5000 ms for a lock by default', () => {
    expect(configOf([]).busyTimeoutMs).toBe(5000)
  })

  it('reads BUSY_TIMEOUT and --busy-timeout, the flag winning', () => {
    expect(configOf([], { BUSY_TIMEOUT: '250' }).busyTimeoutMs).toBe(250)
    expect(configOf(['--busy-timeout', '0'], { BUSY_TIMEOUT: '250' }).busyTimeoutMs).toBe(0)
    expect(helpText).toContain('--busy-timeout')
  })

  it('rejects a BUSY_TIMEOUT that is not a whole number of milliseconds up to 600000', () => {
    expect(errorOf([], { BUSY_TIMEOUT: '1.5' }).message).toBe(
      'BUSY_TIMEOUT must be an integer from 0 to 600000 (got "1.5")',
    )
    expect(errorOf(['--busy-timeout=600001']).message).toContain('BUSY_TIMEOUT must be an integer')
  })
})

describe('parseConfig DURABILITY', () => {
  it('answers a write once it is on disk by default (full)', () => {
    expect(configOf([]).durability).toBe('full')
  })

  it('reads DURABILITY and --durability, the flag winning', () => {
    expect(configOf([], { DURABILITY: 'normal' }).durability).toBe('normal')
    expect(configOf(['--durability', 'full'], { DURABILITY: 'normal' }).durability).toBe('full')
    expect(helpText).toContain('--durability')
  })

  it('rejects any other value, naming the two it takes', () => {
    expect(errorOf([], { DURABILITY: 'off' }).message).toBe('DURABILITY must be one of full, normal (got "off")')
    expect(errorOf(['--durability=FULL']).message).toBe('DURABILITY must be one of full, normal (got "FULL")')
  })
})

describe('parseConfig SHUTDOWN_TIMEOUT', () => {
  it('waits 10 seconds by default, and reads SHUTDOWN_TIMEOUT and --shutdown-timeout', () => {
    expect(configOf([]).shutdownTimeout).toBe(10)
    expect(configOf([], { SHUTDOWN_TIMEOUT: '0' }).shutdownTimeout).toBe(0)
    expect(configOf(['--shutdown-timeout', '30'], { SHUTDOWN_TIMEOUT: '5' }).shutdownTimeout).toBe(30)
  })

  it.each(['soon', '-1', '1.5', '3601'])('rejects SHUTDOWN_TIMEOUT=%p naming it and the value', (value) => {
    const message = errorOf([], { SHUTDOWN_TIMEOUT: value }).message
    expect(message).toContain('SHUTDOWN_TIMEOUT')
    expect(message).toContain(`"${value}"`)
  })

  it('is listed in --help with its variable, the columns kept apart', () => {
    expect(helpText).toMatch(/ {2}--shutdown-timeout <value> {2,}SHUTDOWN_TIMEOUT {2,}\S/)
  })
})

describe('parseConfig request limits', () => {
  const limits = [
    ['maxSearchWords', 'MAX_SEARCH_WORDS', '--max-search-words', 10, 1000],
    ['maxIncludeDepth', 'MAX_INCLUDE_DEPTH', '--max-include-depth', 3, 100],
    ['maxIncludePaths', 'MAX_INCLUDE_PATHS', '--max-include-paths', 10, 1000],
    ['maxFilterIds', 'MAX_FILTER_IDS', '--max-filter-ids', 100, 100_000],
    ['maxRelationshipIds', 'MAX_RELATIONSHIP_IDS', '--max-relationship-ids', 1000, 1_000_000],
    ['maxErrors', 'MAX_ERRORS', '--max-errors', 100, 100_000],
    ['maxAtomicIds', 'MAX_ATOMIC_IDS', '--max-atomic-ids', 3000, 10_000_000],
    ['maxBodyMembers', 'MAX_BODY_MEMBERS', '--max-body-members', 20_000, 100_000_000],
    ['maxLongAnswers', 'MAX_LONG_ANSWERS', '--max-long-answers', 8, 100_000],
    ['maxLongAnswersPerClient', 'MAX_LONG_ANSWERS_PER_CLIENT', '--max-long-answers-per-client', 4, 100_000],
  ] as const

  it.each(limits)('%s has its documented default', (key, _env, _flag, fallback) => {
    expect(configOf([])[key]).toBe(fallback)
  })

  it.each(limits)('%s is read from %s, and from %s over it', (key, env, flag) => {
    expect(configOf([], { [env]: '7' })[key]).toBe(7)
    expect(configOf([flag, '8'], { [env]: '7' })[key]).toBe(8)
    expect(configOf([`${flag}=9`])[key]).toBe(9)
  })

  it.each(limits)('%s accepts 1 and its maximum', (key, env, _flag, _fallback, max) => {
    expect(configOf([], { [env]: '1' })[key]).toBe(1)
    expect(configOf([], { [env]: String(max) })[key]).toBe(max)
  })

  it.each(
    limits.flatMap(([key, env, , , max]) =>
      ['0', 'ten', '-1', '2.5', '', String(max + 1)].map((v) => [key, env, v, max]),
    ),
  )('%s: rejects %s=%p naming the setting, its range and the value', (_key, env, value, max) => {
    expect(errorOf([], { [env]: value }).message).toBe(`${env} must be an integer from 1 to ${max} (got "${value}")`)
  })

  it('MAX_BODY_MEMBERS, unset, lets through the identifiers MAX_RELATIONSHIP_IDS and MAX_ATOMIC_IDS allow (2 members each)', () => {
    expect(configOf([], { MAX_RELATIONSHIP_IDS: '50000' }).maxBodyMembers).toBe(100_100)
    expect(configOf([], { MAX_ATOMIC_IDS: '40000' }).maxBodyMembers).toBe(82_000)
    expect(configOf([], { MAX_RELATIONSHIP_IDS: '50000', MAX_BODY_MEMBERS: '30000' }).maxBodyMembers).toBe(30_000)
  })

  it('are all in --help with their flags, variables and defaults', () => {
    for (const [, env, flag, fallback] of limits) {
      const line = helpText.split('\n').find((l) => l.includes(flag)) ?? ''
      expect(line).toContain(env)
      expect(line).toContain(`(default ${fallback})`)
    }
  })
})

describe('parseConfig READ_WORKERS', () => {
  it('starts 2 read workers by default', () => {
    expect(configOf([]).readWorkers).toBe(2)
  })

  it('reads READ_WORKERS and --read-workers, the flag winning', () => {
    expect(configOf([], { READ_WORKERS: '4' }).readWorkers).toBe(4)
    expect(configOf(['--read-workers', '3'], { READ_WORKERS: '4' }).readWorkers).toBe(3)
    expect(configOf(['--read-workers=1']).readWorkers).toBe(1)
  })

  it('accepts 0 (reads on the main thread) and 64', () => {
    expect(configOf([], { READ_WORKERS: '0' }).readWorkers).toBe(0)
    expect(configOf(['--read-workers', '64']).readWorkers).toBe(64)
  })

  it.each(['65', '-1', '1.5', 'two', ''])('rejects READ_WORKERS=%p naming it, its range and the value', (value) => {
    expect(errorOf([], { READ_WORKERS: value }).message).toBe(
      `READ_WORKERS must be an integer from 0 to 64 (got "${value}")`,
    )
  })

  it('is listed in --help with its variable and default', () => {
    const line = helpText.split('\n').find((l) => l.includes('--read-workers')) ?? ''
    expect(line).toContain('READ_WORKERS')
    expect(line).toContain('(default 2)')
  })
})

describe('parseConfig WORKERS', () => {
  it('serves from this one process by default', () => {
    expect(configOf([]).workers).toBe(1)
  })

  it('reads WORKERS and --workers, the flag winning', () => {
    expect(configOf([], { WORKERS: '4' }).workers).toBe(4)
    expect(configOf(['--workers', '3'], { WORKERS: '4' }).workers).toBe(3)
    expect(configOf(['--workers=64']).workers).toBe(64)
  })

  it('takes auto as one process per CPU core', () => {
    expect(configOf([], { WORKERS: 'auto' }).workers).toBe(Math.min(availableParallelism(), 64))
  })

  it.each(['0', '65', '-1', '1.5', 'two', 'AUTO', ''])(
    'rejects WORKERS=%p naming it, its range and the value',
    (value) => {
      expect(errorOf([], { WORKERS: value }).message).toBe(
        `WORKERS must be an integer from 1 to 64 or auto (got "${value}")`,
      )
    },
  )

  it('gives each of several processes one read worker unless READ_WORKERS says otherwise', () => {
    expect(configOf(['--workers', '2']).readWorkers).toBe(1)
    expect(configOf(['--workers', '2'], { READ_WORKERS: '3' }).readWorkers).toBe(3)
    expect(configOf(['--workers', '2', '--read-workers', '0']).readWorkers).toBe(0)
  })

  it('is listed in --help with its variable and default', () => {
    const line = helpText.split('\n').find((l) => l.includes('--workers')) ?? ''
    expect(line).toContain('WORKERS')
    expect(line).toContain('auto')
    expect(line).toContain('(default 1)')
  })
})

describe('parseConfig API_TOKENS_FILE, PUBLIC_READ, RATE_LIMIT and CORS_ORIGINS', () => {
  it('has no tokens, private reads, no rate limit and no CORS by default', () => {
    const config = configOf([])
    expect(config.apiTokensFile).toBeNull()
    expect(config.publicRead).toBe(false)
    expect(config.rateLimit).toBe(0)
    expect(config.corsOrigins).toBeNull()
  })

  it('reads each from the environment and from its flag, the flag winning', () => {
    const env = {
      API_TOKENS_FILE: '/etc/catalogue/tokens',
      PUBLIC_READ: 'true',
      RATE_LIMIT: '600',
      CORS_ORIGINS: 'https://app.example, http://localhost:5173',
    }
    const fromEnv = configOf([], env)
    expect(fromEnv.apiTokensFile).toBe('/etc/catalogue/tokens')
    expect(fromEnv.publicRead).toBe(true)
    expect(fromEnv.rateLimit).toBe(600)
    expect(fromEnv.corsOrigins).toEqual(['https://app.example', 'http://localhost:5173'])
    const fromFlags = configOf(
      ['--api-tokens-file', 'tokens.txt', '--public-read=false', '--rate-limit', '0', '--cors-origins', '*'],
      env,
    )
    expect(fromFlags.apiTokensFile).toBe('tokens.txt')
    expect(fromFlags.publicRead).toBe(false)
    expect(fromFlags.rateLimit).toBe(0)
    expect(fromFlags.corsOrigins).toBe('*')
  })

  it.each(['yes', '1', 'TRUE', ''])('rejects PUBLIC_READ=%p', (value) => {
    expect(errorOf([], { PUBLIC_READ: value }).message).toBe(`PUBLIC_READ must be true or false (got "${value}")`)
  })

  it.each(['-1', '1.5', 'many', '1000001'])('rejects RATE_LIMIT=%p naming its range', (value) => {
    expect(errorOf([], { RATE_LIMIT: value }).message).toBe(
      `RATE_LIMIT must be an integer from 0 to 1000000 (got "${value}")`,
    )
  })

  it.each(['https://app.example/', 'app.example', '*,https://app.example'])('rejects CORS_ORIGINS=%p', (value) => {
    expect(errorOf([], { CORS_ORIGINS: value }).message).toStartWith('CORS_ORIGINS ')
  })

  it('lists each in --help, "none" standing for an empty default', () => {
    const lineOf = (flag: string) => helpText.split('\n').find((l) => l.includes(flag)) ?? ''
    expect(lineOf('--api-tokens-file')).toContain('API_TOKENS_FILE')
    expect(lineOf('--api-tokens-file')).toContain('(default none)')
    expect(lineOf('--public-read')).toContain('(default false)')
    expect(lineOf('--rate-limit')).toContain('(default 0)')
    expect(lineOf('--cors-origins')).toContain('(default none)')
  })
})

describe('parseConfig TRUSTED_PROXIES', () => {
  it('trusts no proxy by default', () => {
    expect(configOf([]).trustedProxies).toEqual([])
  })

  it('reads addresses and CIDR ranges, IPv4 and IPv6, separated by commas, from the environment or its flag', () => {
    const env = { TRUSTED_PROXIES: '127.0.0.1, 10.0.0.0/8,::1 , fd00::/8,,' }
    expect(configOf([], env).trustedProxies).toEqual(['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8'])
    expect(configOf(['--trusted-proxies', '192.0.2.10'], env).trustedProxies).toEqual(['192.0.2.10'])
  })

  it.each(['localhost', '10.0.0.0/33', 'fd00::/129', '10.0.0.1/', '10.0.0/8', '127.0.0.1, nginx'])(
    'rejects TRUSTED_PROXIES=%p naming the entry',
    (value) => {
      const message = errorOf([], { TRUSTED_PROXIES: value }).message
      expect(message).toStartWith('TRUSTED_PROXIES: "')
      expect(message).toContain('is not an IP address or a CIDR range')
    },
  )
})

describe('parseConfig REQUIRE_IF_MATCH', () => {
  it('does not require If-Match by default', () => {
    expect(configOf([]).requireIfMatch).toBe(false)
  })

  it('reads REQUIRE_IF_MATCH and --require-if-match, the flag winning', () => {
    expect(configOf([], { REQUIRE_IF_MATCH: 'true' }).requireIfMatch).toBe(true)
    expect(configOf(['--require-if-match', 'false'], { REQUIRE_IF_MATCH: 'true' }).requireIfMatch).toBe(false)
    expect(configOf(['--require-if-match=true']).requireIfMatch).toBe(true)
  })

  it.each(['yes', '1', 'TRUE', ''])('rejects REQUIRE_IF_MATCH=%p naming it and the value', (value) => {
    expect(errorOf([], { REQUIRE_IF_MATCH: value }).message).toBe(
      `REQUIRE_IF_MATCH must be true or false (got "${value}")`,
    )
  })

  it('is listed in --help with its variable and default', () => {
    const line = helpText.split('\n').find((l) => l.includes('--require-if-match')) ?? ''
    expect(line).toContain('REQUIRE_IF_MATCH')
    expect(line).toContain('(default false)')
  })
})

describe('parseConfig METRICS', () => {
  it('serves /metrics by default', () => {
    expect(configOf([]).metrics).toBe(true)
  })

  it('reads METRICS and --metrics, the flag winning', () => {
    expect(configOf([], { METRICS: 'false' }).metrics).toBe(false)
    expect(configOf(['--metrics', 'true'], { METRICS: 'false' }).metrics).toBe(true)
    expect(configOf(['--metrics=false']).metrics).toBe(false)
  })

  it.each(['0', 'no', 'FALSE', 'off', ''])(
    'rejects METRICS=%p naming it, the accepted values and the value',
    (value) => {
      expect(errorOf([], { METRICS: value }).message).toBe(`METRICS must be true or false (got "${value}")`)
    },
  )

  it('is listed in --help with its variable and default', () => {
    const line = helpText.split('\n').find((l) => l.includes('--metrics')) ?? ''
    expect(line).toContain('METRICS')
    expect(line).toContain('(default true)')
  })
})

describe('parseConfig PostgreSQL settings', () => {
  it('default to a pool of 10, 10 seconds to connect and 30 seconds a statement', () => {
    const config = configOf([], { DATABASE_URL: 'postgres://app@db:5432/catalogue' })
    expect(config.database).toEqual({ kind: 'postgres', url: 'postgres://app@db:5432/catalogue' })
    expect([config.databasePoolSize, config.databaseConnectTimeout, config.statementTimeoutMs]).toEqual([
      10, 10, 30_000,
    ])
  })

  it('reads DATABASE_POOL_SIZE, DATABASE_CONNECT_TIMEOUT and STATEMENT_TIMEOUT, or their flags', () => {
    const config = configOf(['--statement-timeout', '0'], { DATABASE_POOL_SIZE: '3', DATABASE_CONNECT_TIMEOUT: '2' })
    expect([config.databasePoolSize, config.databaseConnectTimeout, config.statementTimeoutMs]).toEqual([3, 2, 0])
  })

  it('refuses a pool of 0 connections', () => {
    expect(errorOf([], { DATABASE_POOL_SIZE: '0' }).message).toContain('DATABASE_POOL_SIZE')
  })

  it('use prepared statements unless DATABASE_PREPARED_STATEMENTS or its flag is false (PgBouncer)', () => {
    expect(configOf([], {}).databasePreparedStatements).toBe(true)
    expect(configOf([], { DATABASE_PREPARED_STATEMENTS: 'false' }).databasePreparedStatements).toBe(false)
    expect(
      configOf(['--database-prepared-statements', 'false'], { DATABASE_PREPARED_STATEMENTS: 'true' })
        .databasePreparedStatements,
    ).toBe(false)
    expect(errorOf([], { DATABASE_PREPARED_STATEMENTS: 'off' }).message).toBe(
      'DATABASE_PREPARED_STATEMENTS must be true or false (got "off")',
    )
    const line = helpText.split('\n').find((l) => l.includes('--database-prepared-statements')) ?? ''
    expect(line).toContain('DATABASE_PREPARED_STATEMENTS')
    expect(line).toContain('(default true)')
  })
})

describe('parseConfig read replicas (DATABASE_REPLICA_URL, REPLICA_MAX_LAG)', () => {
  const primary = { DATABASE_URL: 'postgres://app@db:5432/catalogue' }

  it('has no replicas and allows a lag of 5 seconds by default', () => {
    const config = configOf([], primary)
    expect(config.databaseReplicaUrl).toEqual([])
    expect(config.replicaMaxLag).toBe(5)
  })

  it('reads one URL or a comma-separated list, and REPLICA_MAX_LAG, or their flags', () => {
    const one = configOf([], { ...primary, DATABASE_REPLICA_URL: 'postgres://app@replica1:5432/catalogue' })
    expect(one.databaseReplicaUrl).toEqual(['postgres://app@replica1:5432/catalogue'])
    const two = configOf(['--replica-max-lag', '30'], {
      ...primary,
      DATABASE_REPLICA_URL: ' postgres://app@replica1/catalogue , postgresql://app:pw@replica2:6432/catalogue,',
    })
    expect(two.databaseReplicaUrl).toEqual([
      'postgres://app@replica1/catalogue',
      'postgresql://app:pw@replica2:6432/catalogue',
    ])
    expect(two.replicaMaxLag).toBe(30)
    const flag = configOf(['--database-replica-url', 'postgres://r/catalogue'], { ...primary, REPLICA_MAX_LAG: '1' })
    expect([flag.databaseReplicaUrl, flag.replicaMaxLag]).toEqual([['postgres://r/catalogue'], 1])
  })

  it('refuses replicas of a SQLite database', () => {
    expect(errorOf([], { DATABASE_REPLICA_URL: 'postgres://r/catalogue' }).message).toBe(
      'DATABASE_REPLICA_URL needs a postgres:// DATABASE_URL: replicas are PostgreSQL standbys',
    )
  })

  it('refuses a replica URL that is not postgres://, names no database, or comes twice, without showing a password', () => {
    const bad = (urls: string) => errorOf([], { ...primary, DATABASE_REPLICA_URL: urls }).message
    expect(bad('mysql://r/catalogue')).toBe('DATABASE_REPLICA_URL takes postgres:// URLs separated by commas')
    const nameless = bad('postgres://app:secret@replica:5432/')
    expect(nameless).toStartWith('DATABASE_REPLICA_URL postgres://app:***@replica:5432/ names no database')
    expect(nameless).not.toContain('secret')
    expect(bad('postgres://app:secret@r/catalogue,postgres://app:secret@r/catalogue')).toBe(
      'DATABASE_REPLICA_URL names postgres://app:***@r/catalogue twice',
    )
  })

  it('refuses a REPLICA_MAX_LAG outside 1 to 3600 seconds', () => {
    expect(errorOf([], { ...primary, REPLICA_MAX_LAG: '0' }).message).toBe(
      'REPLICA_MAX_LAG must be an integer from 1 to 3600 (got "0")',
    )
    expect(errorOf([], { ...primary, REPLICA_MAX_LAG: '1.5' }).message).toContain('REPLICA_MAX_LAG')
  })
})

describe('the table of settings', () => {
  const entries = settingNames.map((name) => [name, settings[name]] as const)

  it('gives each setting its own flag, named after its variable', () => {
    for (const [, s] of entries) expect(s.flag).toBe(`--${s.env.toLowerCase().replaceAll('_', '-')}`)
    expect(new Set(entries.map(([, s]) => s.env)).size).toBe(entries.length)
  })

  it('holds defaults that the settings accept', () => {
    for (const [, s] of entries) expect(() => s.kind.parse(s.fallback, s.env)).not.toThrow()
  })
})

describe('catalogue --help', () => {
  const lines = helpText.split('\n').filter((line) => line.startsWith('  --') && line.includes('<value>'))

  it('gives each setting one default, at the end of its line', () => {
    expect(lines).toHaveLength(settingNames.length)
    for (const line of lines)
      expect({ line, defaults: line.match(/\(default /g)?.length }).toEqual({ line, defaults: 1 })
  })

  it('shows DATABASE_LISTEN_URL as defaulting to DATABASE_URL', () => {
    const line = lines.find((l) => l.includes('--database-listen-url')) ?? ''
    expect(line).toContain('DATABASE_LISTEN_URL')
    expect(line).toEndWith('(default DATABASE_URL)')
  })
})
