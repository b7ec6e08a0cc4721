import { plainToInstance, type ClassConstructor } from 'class-transformer';
import { getMetadataStorage, validate, type ValidationError } from 'class-validator';
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

/** Flattens class-validator's tree into `{field, messages}` with dotted paths. */
export function flattenValidationErrors(errors: ValidationError[], prefix = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const e of errors) {
    const field = prefix ? `${prefix}.${e.property}` : e.property;
    if (e.constraints) {
      out.push({ field, messages: Object.values(e.constraints).map((m) => m.replace(/^property /, '')) });
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
  const clean = Object.fromEntries(Object.entries(plain).filter(([k]) => known.has(k)));
  const instance = plainToInstance(cls, clean, { enableImplicitConversion: false });
  const errors = await validate(instance, VALIDATOR_OPTIONS);
  problems.push(...flattenValidationErrors(errors, prefix));
  if (problems.length > 0) throw DomainError.validation(problems);
  return instance;
}
