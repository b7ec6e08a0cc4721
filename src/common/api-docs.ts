import { applyDecorators, type Type } from '@nestjs/common';
import { ApiBody, ApiQuery } from '@nestjs/swagger';
import { ValidationTypes } from 'class-validator';
import { targetConstructorToSchema } from 'class-validator-jsonschema';

type IOptions = NonNullable<Parameters<typeof targetConstructorToSchema>[1]>;

/**
 * Schema options: a custom constraint (`@Validate(…)`, e.g. the known-tools check on capabilities) is
 * enforced by the server and says nothing a schema can express, so it adds no keyword (the library would
 * emit a `$ref` to the constraint class, which does not exist in the document).
 */
export const SCHEMA_OPTIONS: Partial<IOptions> = {
  refPointerPrefix: '#/components/schemas/',
  additionalConverters: {
    [ValidationTypes.CUSTOM_VALIDATION]: () => ({}),
    // A nested DTO's schema is given inline by its property (`@JSONSchema(nestedSchema(Dto))`): no `$ref`.
    [ValidationTypes.NESTED_VALIDATION]: () => ({}),
  },
};

type Schema = { properties?: Record<string, object>; required?: string[] };

/**
 * A DTO's JSON Schema, read from its class-validator decorators (the same
 * ones the global ValidationPipe enforces), so the document cannot drift
 * from what the server accepts.
 */
export function schemaOf(dto: Type): Schema {
  return targetConstructorToSchema(dto, SCHEMA_OPTIONS);
}

/** A nested DTO's schema, inline, for the `@JSONSchema` of the property that holds it. */
export function nestedSchema(dto: Type): Record<string, unknown> {
  return { type: 'object', additionalProperties: false, ...targetConstructorToSchema(dto, SCHEMA_OPTIONS) };
}

/** The query parameters of a `@Query()` DTO, one OpenAPI parameter per property. */
export function DocQuery(dto: Type): MethodDecorator {
  const schema = schemaOf(dto);
  return applyDecorators(
    ...Object.entries(schema.properties ?? {}).map(([name, property]) =>
      ApiQuery({ name, required: schema.required?.includes(name) ?? false, schema: property }),
    ),
  );
}

/** A request body given as a schema (for bodies validated by hand, like an agent's constitution). */
export function DocBody(schema: object, description?: string): MethodDecorator {
  return ApiBody({ schema, description });
}
