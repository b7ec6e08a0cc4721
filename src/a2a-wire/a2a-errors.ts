import { DomainError, type ErrorCode } from '../common/errors.js';

export type Dialect = '1.0' | '0.3';

/** What the A2A surface itself refuses (the engine's refusals are `TaskError`s). */
export type A2aErrorKind =
  | 'parse_error'
  | 'invalid_request'
  | 'method_not_found'
  | 'invalid_params'
  | 'internal'
  | 'version_not_supported'
  | 'push_not_supported'
  | 'unsupported_operation'
  | 'content_type_not_supported'
  | 'extended_card_not_configured';

/** The REST code of each kind (spec §5.4's HTTP column). */
const REST_CODE: Record<A2aErrorKind, ErrorCode> = {
  parse_error: 'invalid_json',
  invalid_request: 'validation_failed',
  method_not_found: 'not_found',
  invalid_params: 'validation_failed',
  internal: 'internal',
  version_not_supported: 'validation_failed',
  push_not_supported: 'validation_failed',
  unsupported_operation: 'validation_failed',
  content_type_not_supported: 'validation_failed',
  extended_card_not_configured: 'validation_failed',
};

/** The A2A surface's one error type; each binding's translator turns `reason` into its wire code. */
export class A2aError extends DomainError {
  constructor(
    readonly reason: A2aErrorKind,
    message: string,
    readonly field?: string,
    readonly metadata?: Record<string, string>,
  ) {
    super(REST_CODE[reason], message, field ? [{ field, messages: [message] }] : undefined);
    this.name = 'A2aError';
  }

  static invalidParams(field: string, problem: string): A2aError {
    return new A2aError('invalid_params', `invalid params: ${field} ${problem}`, field);
  }
}
