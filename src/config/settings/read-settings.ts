import { parseArgs } from 'node:util';
import { plainToInstance } from 'class-transformer';
import { validateSync, type ValidationError } from 'class-validator';
import { settingsOf, type SettingSpec } from './setting-registry.js';
import { SETTINGS_AREAS, type ConfigKey, type SettingsArea } from './settings-areas.js';

/** A configuration that cannot start Arbiter; `problems` name the variables (or flags), one each. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** Every setting of every area, in page order. */
export function allSettings(): SettingSpec[] {
  return SETTINGS_AREAS.flatMap(({ schema }) => settingsOf(schema));
}

/** The environment variable of a setting, for messages about it. */
export function envName(key: ConfigKey): string {
  const spec = allSettings().find((s) => s.key === key);
  if (!spec) throw new Error(`no setting ${key}`);
  return spec.env;
}

/** Parses the flags settings declare (`--port N` / `--bind ADDR`, `--port=N` too); anything else is an error. */
export function parseCliFlags(argv: string[]): Partial<Record<string, string>> {
  const names = allSettings().flatMap((s) => (s.flag ? [s.flag.name] : []));
  try {
    const { values } = parseArgs({
      args: argv,
      options: Object.fromEntries(names.map((name) => [name, { type: 'string' as const }])),
      strict: true,
      allowPositionals: false,
    });
    return Object.fromEntries(Object.entries(values).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch (err) {
    throw new ConfigError([(err as Error).message]);
  }
}

/**
 * Reads and validates every area's settings. Every problem is reported at once; returns one validated instance
 * per area, in `SETTINGS_AREAS` order.
 */
export function readSettings(env: NodeJS.ProcessEnv, argv: string[]): object[] {
  const flags = parseCliFlags(argv);
  const read = SETTINGS_AREAS.map(({ schema }: SettingsArea) => readArea(schema, env, flags));
  const problems = read.flatMap((r) => r.problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return read.map((r) => r.values);
}

/**
 * Reads one settings class: a flag wins over its variable, an empty variable counts as unset (the default
 * stays). Each problem names the variable (or flag) that carries the bad value and shows the value unless it is
 * a secret.
 */
export function readArea<T extends object>(
  schema: new () => T,
  env: NodeJS.ProcessEnv,
  flags: Partial<Record<string, string>> = {},
): { values: T; problems: string[] } {
  const raw: Record<string, string> = {};
  const source: Record<string, string> = {};
  for (const spec of settingsOf(schema)) {
    const flag = spec.flag ? flags[spec.flag.name] : undefined;
    const value = flag ?? env[spec.env];
    if (flag === undefined && !value) continue;
    raw[spec.key] = value ?? '';
    source[spec.key] = flag === undefined ? spec.env : `--${spec.flag?.name}`;
  }
  const values = plainToInstance(schema, raw, { exposeDefaultValues: true });
  const problems = validateSync(values, { forbidUnknownValues: false }).map((error) =>
    describeProblem(error, settingsOf(schema), source, raw),
  );
  return { values, problems };
}

function describeProblem(
  error: ValidationError,
  specs: readonly SettingSpec[],
  source: Record<string, string>,
  raw: Record<string, string>,
): string {
  const spec = specs.find((s) => s.key === error.property);
  const shown = spec?.secret ? '(hidden)' : JSON.stringify(raw[error.property]);
  // Several validators of one setting share its message: say it once.
  const messages = [...new Set(Object.values(error.constraints ?? {}))].join('; ');
  return `${source[error.property] ?? spec?.env ?? error.property} ${messages} (got ${shown})`;
}
