import type { Config, SettingName } from './service-config'
import type { Setting } from './setting'
import { accessSettings } from './settings/access'
import { databaseSettings } from './settings/database'
import { limitSettings } from './settings/limits'
import { serviceSettings } from './settings/service'

/**
 * Every setting of the service, one entry each, in the order --help and docs/configuration.md list
 * them. The type below makes it whole: each Config field but `database` (read from DATABASE_URL)
 * has an entry, whose kind reads a value of that field's type.
 */
export const settings: { readonly [K in SettingName]: Setting<Config[K]> } = {
  ...serviceSettings,
  ...databaseSettings,
  ...accessSettings,
  ...limitSettings,
}

export const settingNames = Object.keys(settings) as SettingName[]
