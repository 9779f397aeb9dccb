/*
 * The service's settings: one table (table.ts, its entries in settings/) that the one
 * parser reads (parser.ts, then the rules between settings in rules.ts), --help prints (help.ts)
 * and docs/configuration.md's table is written from (markdown.ts). This file is what the rest of
 * the service imports.
 */
export {
  addressSettingsHelp,
  type CommandStoreSettings,
  parseAddressSettings,
  parseStoreSettings,
  SQLITE_FILE_SETTINGS,
  STORE_SETTINGS,
  type StoreSettingName,
  settingFlag,
  storeSettingsHelp,
} from './command-settings'
export { helpText, settingVariables } from './help'
export { parseConfig } from './rules'
export type { Config, StoreSettings } from './service-config'
export { ConfigError } from './setting'
