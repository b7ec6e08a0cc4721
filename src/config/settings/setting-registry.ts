/**
 * What is known of each setting at run time, recorded by its decorator
 * (`setting.decorators.ts`): the loader reads the environment through it and
 * the reference page (`npm run docs:config`) lists it. The doc comment above
 * each setting is the other half of the page.
 */
export interface SettingSpec {
  /** The `AppConfig` property it fills. */
  readonly key: string;
  /** The environment variable that sets it. */
  readonly env: string;
  /** A command-line flag that sets it too and wins over the variable (`--port N`: name `port`, argument `N`). */
  readonly flag?: { readonly name: string; readonly arg: string };
  /** The values it takes, in words, for the reference page. */
  readonly allowed: string;
  /** A secret: never shown in an error, a log line or `describe()`. */
  readonly secret: boolean;
}

/** A class whose properties are settings (its constructor, as decorators see it). */
type SettingsClass = object;

const registry = new Map<SettingsClass, SettingSpec[]>();

/** Records one setting of a settings class (decorators run in declaration order, so the list keeps it). */
export function registerSetting(schema: SettingsClass, spec: SettingSpec): void {
  const specs = registry.get(schema) ?? [];
  if (specs.some((s) => s.key === spec.key)) throw new Error(`setting ${spec.key} is declared twice`);
  specs.push(spec);
  registry.set(schema, specs);
}

/** The settings a class declares, in declaration order. */
export function settingsOf(schema: SettingsClass): readonly SettingSpec[] {
  return registry.get(schema) ?? [];
}
