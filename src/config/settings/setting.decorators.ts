import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  MinLength,
  ValidateBy,
} from 'class-validator';
import { MODEL_ID_HINT, MODEL_ID_PATTERN, routeModel } from '../model-routes.js';
import { registerSetting } from './setting-registry.js';

/**
 * One decorator per kind of setting. Each names the environment variable,
 * records the setting for the loader and the reference page, and applies the
 * class-validator rules with the one message a bad value gets: the loader
 * prefixes it with the variable and appends the value (`PORT must be an integer
 * between 0 and 65535 (got "abc")`). An unset variable is not validated: the
 * property keeps its default.
 */

/** What every setting decorator may add. */
export interface SettingOptions {
  /** A token, key or URL with a password: never shown in errors or logs. */
  secret?: boolean;
  /** A command-line flag that sets it too, as the reference page shows it: `--port N`. */
  flag?: `--${string} ${string}`;
  /** The values it takes, in Markdown for the reference page, when the message does not say it well. */
  allowed?: string;
}

const toInt = ({ value }: { value: unknown }): unknown =>
  typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value.trim()) : value;

const toBool = ({ value }: { value: unknown }): unknown => {
  if (typeof value !== 'string') return value;
  const v = value.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  return value;
};

/** Records the setting, then applies its transform and validators (skipped when the variable is unset). */
function envSetting(
  env: string,
  allowed: string,
  options: SettingOptions,
  ...rules: PropertyDecorator[]
): PropertyDecorator {
  const record: PropertyDecorator = (target, key) => {
    const [name, arg] = options.flag?.slice(2).split(' ') ?? [];
    registerSetting(target.constructor, {
      key: String(key),
      env,
      allowed: options.allowed ?? allowed,
      secret: options.secret ?? false,
      ...(name && arg ? { flag: { name, arg } } : {}),
    });
  };
  return applyDecorators(record, IsOptional(), ...rules);
}

/** The page's "allowed" column says what the message asks for: `must be host:port` allows `host:port`. */
const allowedBy = (message: string): string => message.replace(/^must be /, '');

function intSetting(env: string, min: number, max: number, unit: string, options: SettingOptions): PropertyDecorator {
  const message = `must be an integer between ${min} and ${max}`;
  const allowed = `${unit ? '' : 'integer '}${min}–${max}${unit ? ` ${unit}` : ''}`;
  return envSetting(
    env,
    allowed,
    options,
    Transform(toInt),
    IsInt({ message }),
    Min(min, { message }),
    Max(max, { message }),
  );
}

/** A count (an integer from `min` to `max`). */
export function IntEnv(env: string, min: number, max: number, options: SettingOptions = {}): PropertyDecorator {
  return intSetting(env, min, max, '', options);
}

/** A duration in milliseconds, from `min` to `max`. */
export function DurationEnv(env: string, min: number, max: number): PropertyDecorator {
  return intSetting(env, min, max, 'ms', {});
}

/** A size in bytes, from `min` to `max`. */
export function BytesEnv(env: string, min: number, max: number): PropertyDecorator {
  return intSetting(env, min, max, 'bytes', {});
}

/** `true` or `false`; `1`/`0`, `yes`/`no`, `on`/`off` too (any case). */
export function BoolEnv(env: string): PropertyDecorator {
  const message = 'must be true or false';
  const allowed = '`true` or `false` (also `1`/`0`, `yes`/`no`, `on`/`off`)';
  return envSetting(env, allowed, {}, Transform(toBool), IsBoolean({ message }));
}

/** One of a few words. */
export function EnumEnv(
  env: string,
  values: readonly string[],
  message = `must be one of ${values.join(', ')}`,
): PropertyDecorator {
  return envSetting(env, values.map((v) => `\`${v}\``).join(', '), {}, IsIn(values, { message }));
}

/** A value of a given shape; `message` says the shape ("must be …"). */
export function PatternEnv(
  env: string,
  pattern: RegExp,
  message: `must ${string}`,
  options: SettingOptions = {},
): PropertyDecorator {
  return envSetting(env, allowedBy(message), options, Matches(pattern, { message }));
}

/** The URL shapes settings take: pattern, message, and the page's words. */
const URL_FORMS = {
  /** Any http(s) URL: an API's base. */
  http: [/^https?:\/\/\S+$/, 'must be an http(s) URL', 'an `http(s)://` URL'],
  /** An http(s) URL a path is appended to. */
  base: [
    /^https?:\/\/[^\s?#]+$/,
    'must be an http(s) URL without query or fragment',
    'an `http(s)://` URL without query or fragment',
  ],
  /** The base of the URLs Arbiter gives out: a host is required. */
  public: [
    /^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/,
    'must be an absolute http(s) URL without query or fragment',
    'an absolute `http(s)://` URL without query or fragment',
  ],
  postgres: [
    /^postgres(ql)?:\/\/\S+$/,
    'must be a postgres:// or postgresql:// URL',
    'a `postgres://` or `postgresql://` URL',
  ],
} as const satisfies Record<string, readonly [RegExp, `must ${string}`, string]>;

/** A URL of one of the shapes above. */
export function UrlEnv(env: string, form: keyof typeof URL_FORMS, options: SettingOptions = {}): PropertyDecorator {
  const [pattern, message, allowed] = URL_FORMS[form];
  return PatternEnv(env, pattern, message, { allowed, ...options });
}

/** Comma-separated `host` or `host:port` entries (the egress allowlists). */
export function HostListEnv(env: string): PropertyDecorator {
  return PatternEnv(env, /^[A-Za-z0-9.:[\],_-]*$/, 'must be comma-separated host or host:port entries', {
    allowed: 'comma-separated `host` or `host:port` entries',
  });
}

/** Free text (a path, a key) of at least `minLength` characters; `allowed` describes it on the page. */
export function TextEnv(
  env: string,
  { minLength = 1, allowed, ...options }: SettingOptions & { minLength?: number; allowed?: string } = {},
): PropertyDecorator {
  const message = minLength > 1 ? `must be at least ${minLength} characters` : 'must not be empty';
  const described = allowed ?? (minLength > 1 ? allowedBy(message) : 'any text');
  return envSetting(env, described, options, IsString(), MinLength(minLength, { message }));
}

/** A model id some provider serves (see `model-routes.ts`): an unknown provider is refused at start. */
export function ModelEnv(env: string): PropertyDecorator {
  const isRoutable = (value: unknown): boolean =>
    typeof value === 'string' && MODEL_ID_PATTERN.test(value) && !!routeModel(value);
  const allowed =
    '`echo`, `anthropic/<model>`, `openai/<model>`, `ollama/<model>`, `openrouter/<model>`, or a model name ' +
    'starting with `claude-`, `gpt-` or `o<digit>`';
  return envSetting(
    env,
    allowed,
    {},
    ValidateBy({
      name: 'isRoutableModel',
      validator: { validate: isRoutable, defaultMessage: () => `must be ${MODEL_ID_HINT}` },
    }),
  );
}
