import { Injectable, SetMetadata, ValidationPipe, type ArgumentMetadata } from '@nestjs/common';
import { getMetadataStorage } from 'class-validator';
import { DomainError } from './errors.js';
import { flattenValidationErrors, validateAs, VALIDATOR_OPTIONS } from './validation.js';

const EMPTY_BODY_OK = 'arbiter:empty-body-ok';
/** On a body DTO class whose fields are all optional: a request without a body is validated as `{}`. */
export const EmptyBodyAllowed = (): ClassDecorator => SetMetadata(EMPTY_BODY_OK, true);

const isDto = (metatype: unknown): metatype is new () => object =>
  typeof metatype === 'function' &&
  getMetadataStorage().getTargetValidationMetadatas(metatype, '', true, false).length > 0;

/**
 * The global `ValidationPipe`: every `@Body()` and `@Query()` typed with a
 * DTO class is validated by its class-validator decorators (unknown keys
 * refused, nothing converted implicitly) and answered as
 * `validation_failed` naming each field — with one check Nest's pipe lacks:
 * keys class-transformer would drop silently (`__proto__`, `constructor`)
 * are read from the raw input first (see `validateAs`). Path parameters and
 * untyped values pass through.
 */
@Injectable()
export class DtoValidationPipe extends ValidationPipe {
  constructor() {
    super({
      ...VALIDATOR_OPTIONS,
      transform: true,
      transformOptions: { enableImplicitConversion: false },
      exceptionFactory: (errors) => DomainError.validation(flattenValidationErrors(errors)),
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const { metatype, type } = metadata;
    if ((type !== 'body' && type !== 'query') || !isDto(metatype)) return value;
    const empty = value === undefined || value === '';
    if (type === 'body' && empty && Reflect.getMetadata(EMPTY_BODY_OK, metatype) === true) value = {};
    return validateAs(metatype, value);
  }
}
