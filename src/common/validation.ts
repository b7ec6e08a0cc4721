import { plainToInstance, type ClassConstructor } from 'class-transformer';
import { getMetadataStorage, validate, ValidateIf, type ValidationError } from 'class-validator';
import { DomainError, type FieldError } from './errors.js';

const declared = new WeakMap<object, Set<string>>();

/** The properties a DTO class declares validators for. */
function declaredProperties(cls: ClassConstructor<object>): Set<string> {
  let set = declared.get(cls);
  if (!set) {
    const metas = getMetadataStorage().getTargetValidationMetadatas(cls, '', true, false);
    set = new Set(metas.map((m) => m.propertyName));
    declared.set(cls, set);
  }
  return set;
}

/**
 * Like `@IsOptional()` for a field that may be left out but is never `null`: `IsOptional` lets `null` through
 * unvalidated, as if absent, and the service would then read it. With this a `null` meets the field's own checks
 * (and their message).
 */
export const OmittableNotNull = (): PropertyDecorator => ValidateIf((_dto, value) => value !== undefined);

/** Keys class-transformer takes for an object's own machinery: a nested one makes it throw (`prototype` does not). */
export const RESERVED_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor']);

/** The paths of reserved keys at any depth of `value` (at most `max`; a parsed body's depth is bounded already). */
function reservedKeyPaths(value: unknown, path: string, out: string[], max = 10): string[] {
  if (out.length >= max || value === null || typeof value !== 'object') return out;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length && out.length < max; i++) reservedKeyPaths(value[i], `${path}[${i}]`, out, max);
    return out;
  }
  for (const [k, v] of Object.entries(value)) {
    const at = `${path}.${k}`;
    if (RESERVED_KEYS.has(k)) out.push(at);
    else reservedKeyPaths(v, at, out, max);
    if (out.length >= max) break;
  }
  return out;
}

const arrayLimitsOf = new WeakMap<object, [string, number][]>();

/** The properties of a DTO class with an `@ArrayMaxSize`, and the limit. */
function arrayLimits(cls: ClassConstructor<object>): [string, number][] {
  let limits = arrayLimitsOf.get(cls);
  if (!limits) {
    limits = getMetadataStorage()
      .getTargetValidationMetadatas(cls, '', true, false)
      .filter((m) => m.name === 'arrayMaxSize' && typeof m.constraints?.[0] === 'number')
      .map((m) => [m.propertyName, m.constraints[0] as number]);
    arrayLimitsOf.set(cls, limits);
  }
  return limits;
}

/** Constraints that say what a value is (present, of its type): when one fails, the others have nothing to add. */
const FIRST = ['whitelistValidation', 'isDefined', 'nestedValidation'];
const TYPE_CHECKS = new Set(['isString', 'isNumber', 'isInt', 'isBoolean', 'isArray', 'isObject', 'isDate', 'isEnum']);

/**
 * The one problem of a property that applies: a missing value or a wrong
 * type first (`temperature: "hot"` is "must be a number", not also out of
 * range), else the first failing constraint as the DTO declares them.
 * class-validator runs a property's decorators bottom-up, so `constraints`
 * lists them last-declared first (and `stopAtFirstError` would stop at the
 * last-declared one, usually a range check).
 */
function applicableMessage(constraints: Record<string, string>): string {
  const names = Object.keys(constraints);
  const chosen =
    FIRST.find((n) => Object.hasOwn(constraints, n)) ??
    names.find((n) => TYPE_CHECKS.has(n)) ??
    names[names.length - 1];
  return constraints[chosen].replace(/^property /, '').replace(/ conforming to the specified constraints$/, '');
}

/** Flattens class-validator's tree into `{field, messages}` with dotted paths: one message per field. */
/** A UUID in its canonical text form (any version, any case): the ids of tenants, tokens, issuers. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function flattenValidationErrors(errors: ValidationError[], prefix = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const e of errors) {
    const field = prefix ? `${prefix}.${e.property}` : e.property;
    if (e.constraints && Object.keys(e.constraints).length > 0) {
      out.push({ field, messages: [applicableMessage(e.constraints)] });
    }
    if (e.children?.length) out.push(...flattenValidationErrors(e.children, field));
  }
  return out;
}

export const VALIDATOR_OPTIONS = {
  whitelist: true,
  forbidNonWhitelisted: true,
  forbidUnknownValues: true,
  validationError: { target: false, value: false },
} as const;

/**
 * Validates a plain value against a DTO class. Unknown fields are rejected;
 * the error names every failing field (prefixed with `prefix`).
 */
export async function validateAs<T extends object>(cls: ClassConstructor<T>, plain: unknown, prefix = ''): Promise<T> {
  if (plain === null || typeof plain !== 'object' || Array.isArray(plain)) {
    throw DomainError.validation([{ field: prefix || 'body', messages: ['must be a JSON object'] }]);
  }
  // class-transformer silently drops keys such as `__proto__` and `constructor`,
  // so the whitelist would never see them: check the raw keys first.
  const known = declaredProperties(cls);
  const unknownKeys = Object.keys(plain).filter((k) => !known.has(k));
  const name = (k: string): string => (prefix ? `${prefix}.${k}` : k);
  const problems: FieldError[] = unknownKeys.map((k) => ({ field: name(k), messages: [`${k} should not exist`] }));
  const clean: Record<string, unknown> = Object.fromEntries(Object.entries(plain).filter(([k]) => known.has(k)));
  // An array over its limit is cut to one past it first: it fails its limit just the same, and its elements'
  // checks cost no more than that (a body of 1 MiB holds 300,000 of them).
  for (const [k, max] of arrayLimits(cls)) {
    const v = clean[k];
    if (Array.isArray(v) && v.length > max + 1) clean[k] = v.slice(0, max + 1) as unknown[];
  }
  // Deeper down (a map such as `headers`, a nested DTO) they make class-transformer throw: named here instead.
  const reserved = Object.entries(clean).flatMap(([k, v]) => reservedKeyPaths(v, name(k), []));
  if (reserved.length > 0) {
    const key = (path: string): string => path.slice(path.lastIndexOf('.') + 1);
    problems.push(...reserved.map((at) => ({ field: at, messages: [`${key(at)} may not be a key here`] })));
    throw DomainError.validation(problems);
  }
  const instance = plainToInstance(cls, clean, { enableImplicitConversion: false });
  const errors = await validate(instance, VALIDATOR_OPTIONS);
  problems.push(...flattenValidationErrors(errors, prefix));
  if (problems.length > 0) throw DomainError.validation(problems);
  return instance;
}
