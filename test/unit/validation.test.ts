import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClassConstructor } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  Validate,
  ValidatorConstraint,
  type ValidatorConstraintInterface,
} from 'class-validator';
import { DomainError, type FieldError } from '../../src/common/errors.js';
import { validateAs } from '../../src/common/validation.js';
import { ChatDto, ConversationPatchDto } from '../../src/native-api/dto.js';
import { ConstitutionDto } from '../../src/registry/constitution.js';
import { CreateTenantDto, TenantLimitsDto } from '../../src/tenants/dto/tenant.dto.js';
import { TENANT_SCOPES } from '../../src/common/auth.decorators.js';

/** The field problems a DTO's validation reports for `body`. */
async function problems(cls: ClassConstructor<object>, body: unknown): Promise<FieldError[]> {
  try {
    await validateAs(cls, body);
  } catch (err) {
    assert.ok(err instanceof DomainError && err.details, String(err));
    return err.details;
  }
  assert.fail(`accepted ${JSON.stringify(body)}`);
}

/** How many elements `Counted`'s check looked at. */
let looked = 0;
@ValidatorConstraint({ name: 'counted' })
class CountedElement implements ValidatorConstraintInterface {
  validate(): boolean {
    looked++;
    return true;
  }
}
class Counted {
  @IsArray()
  @ArrayMaxSize(3)
  @Validate(CountedElement, { each: true })
  items!: string[];
}

/** field → its messages. */
const byField = (list: FieldError[]) => Object.fromEntries(list.map((d) => [d.field, d.messages]));

describe('DTO validation: one message per field, the one that applies', () => {
  it('a value of the wrong type says only that; a value of the right type its first failing rule', async () => {
    assert.deepEqual(
      byField(await problems(ConstitutionDto, { temperature: 'hot', max_tokens: 'x', rules: 'be nice', model: 5 })),
      {
        temperature: ['temperature must be a number'],
        max_tokens: ['max_tokens must be an integer number'],
        rules: ['rules must be an array'],
        model: ['model must be a string'],
      },
    );
    assert.deepEqual(byField(await problems(ConstitutionDto, { temperature: 3, max_tokens: 0 })), {
      temperature: ['temperature must not be greater than 2'],
      max_tokens: ['max_tokens must not be less than 1'],
    });
    // Each item: its type first, then its length, then its characters (as the DTO declares them).
    assert.deepEqual(byField(await problems(ConstitutionDto, { rules: ['', 5], capabilities: ['/nope', 3] })), {
      rules: ['each value in rules must be a string'],
      capabilities: ['each value in capabilities must be a string'],
    });
    assert.deepEqual(byField(await problems(ConstitutionDto, { rules: [''] })), {
      rules: ['each value in rules must be longer than or equal to 1 and shorter than or equal to 1000 characters'],
    });
    assert.match(
      (await problems(ConstitutionDto, { capabilities: ['/nope'] }))[0].messages[0],
      /unknown tool "\/nope"/,
    );
  });

  it('other DTOs: native API, tenants', async () => {
    assert.deepEqual(byField(await problems(ChatDto, { message: 5 })), {
      message: ['message is required and must be a string'],
    });
    assert.deepEqual(byField(await problems(ChatDto, { message: '' })), { message: ['message must not be empty'] });
    assert.deepEqual(byField(await problems(ConversationPatchDto, { title: 'x'.repeat(201) })), {
      title: ['title must be shorter than or equal to 200 characters'],
    });
    assert.deepEqual(byField(await problems(CreateTenantDto, { name: 7 })), { name: ['name must be a string'] });
    // The same text on three decorators used to come three times.
    const limit = 'must be null (the default) or an integer between 0 (unlimited) and 1000000';
    assert.deepEqual(byField(await problems(TenantLimitsDto, { sends_per_minute: 'many', max_open_streams: -1 })), {
      sends_per_minute: [limit],
      max_open_streams: [limit],
    });
  });

  it('unknown fields are still named one by one, beside the others', async () => {
    assert.deepEqual(byField(await problems(ConstitutionDto, { extra: 1, temperature: 'hot' })), {
      extra: ['extra should not exist'],
      temperature: ['temperature must be a number'],
    });
  });

  it('an array over its limit is checked as one just over it: the same problems, at the cost of a short one', async () => {
    // 300,000 elements that each fail their own check, beside another bad field: both named, as for 65.
    assert.deepEqual(byField(await problems(ConstitutionDto, { rules: Array(300_000).fill(1), temperature: 'hot' })), {
      rules: ['each value in rules must be a string'],
      temperature: ['temperature must be a number'],
    });
    assert.deepEqual(byField(await problems(ConstitutionDto, { rules: Array(300_000).fill('ab') })), {
      rules: ['rules must contain no more than 64 elements'],
    });
    // Each element's check ran for one past the limit, not for every element sent.
    looked = 0;
    assert.deepEqual(byField(await problems(Counted, { items: Array(10_000).fill('x') })), {
      items: ['items must contain no more than 3 elements'],
    });
    assert.equal(looked, 4);
    assert.deepEqual(
      byField(await problems(CreateTenantDto, { name: 't', scopes: Array(50_000).fill('a2a:invoke') })),
      {
        scopes: [`scopes must be a non-empty list of ${TENANT_SCOPES.join(', ')}`],
      },
    );
  });
});
