import type { Setting } from './setting'
import { settingNames, settings } from './table'

/*
 * The settings tables of the documentation, written from the table of settings so that they cannot
 * drift from it: docs/configuration.md's, every setting, and the README's, the settings most often
 * set (those with a `brief`). scripts/write-settings-tables.ts writes them; test/docs.test.ts
 * checks docs/configuration.md's.
 */

const all: readonly Setting<unknown>[] = settingNames.map((name) => settings[name])

function defaultOf(s: Setting<unknown>): string {
  return s.docDefault ?? (s.fallback === '' ? 'none' : `\`${s.fallback}\``)
}

/** docs/configuration.md's table: every setting, what it accepts and what it means. */
export function configurationTable(): string {
  return [
    '| Variable | Flag | Default | Accepts | Meaning |',
    '|---|---|---|---|---|',
    ...all.map((s) => `| \`${s.env}\` | \`${s.flag}\` | ${defaultOf(s)} | ${s.kind.accepts} | ${s.doc} |`),
  ].join('\n')
}

/** The README's table: the settings most often set, in brief. */
export function readmeTable(): string {
  return [
    '| Variable | Flag | Default | Meaning |',
    '|---|---|---|---|',
    ...all.flatMap((s) => (s.brief ? [`| \`${s.env}\` | \`${s.flag}\` | ${defaultOf(s)} | ${s.brief} |`] : [])),
  ].join('\n')
}

/** Where the settings table of a markdown text is: the run of table lines from its `| Variable | Flag |` header. */
function tableSpan(markdown: string): { readonly start: number; readonly end: number } | null {
  const start = markdown.search(/^\| Variable \| Flag \|/m)
  if (start === -1) return null
  const after = markdown.slice(start).search(/^(?!\|)/m)
  return { start, end: after === -1 ? markdown.length : start + after }
}

/** The settings table a markdown text holds (without its last line break), or null. */
export function settingsTableIn(markdown: string): string | null {
  const span = tableSpan(markdown)
  return span && markdown.slice(span.start, span.end).replace(/\n$/, '')
}

/** The markdown text with its settings table replaced by `table`. */
export function withSettingsTable(markdown: string, table: string): string {
  const span = tableSpan(markdown)
  if (span === null) throw new Error('no settings table (a line starting "| Variable | Flag |") to replace')
  return `${markdown.slice(0, span.start)}${table}\n${markdown.slice(span.end)}`
}
