import { Controller, Get, Param } from '@nestjs/common';
import { CurrentTenant, type TenantPrincipal, RequireScope } from '../../common/auth.decorators.js';
import type { PushDeliveryView } from '../push-config.js';
import { PushService } from '../services/push.service.js';
import { ApiTags } from '@nestjs/swagger';

/** The native view of one config's delivery (snake_case, like the rest of `/v1`); no secrets. */
function deliveryView(d: PushDeliveryView) {
  return {
    id: d.id,
    url: d.url,
    dialect: d.dialect,
    token_set: d.tokenSet,
    authentication: d.authentication
      ? { scheme: d.authentication.scheme, credentials_set: d.authentication.credentialsSet }
      : null,
    state: d.state,
    delivered_seq: d.deliveredSeq,
    last_seq: d.lastSeq,
    delivered_count: d.deliveredCount,
    failures: d.attempts,
    next_attempt_at: d.nextAttemptAt,
    last_attempt_at: d.lastAttemptAt,
    last_delivered_at: d.lastDeliveredAt,
    last_error: d.lastError,
  };
}

/**
 * `GET /v1/requests/:id/push-configs`: where each of a task's webhooks
 * stands — cursor, failures in a row, next retry, dead-letter — for the
 * operator of the tenant. (A task id is its request id.)
 */
@ApiTags('native')
@Controller('v1/requests')
export class PushDeliveriesController {
  constructor(private readonly push: PushService) {}

  @RequireScope('a2a:invoke', 'tasks:read')
  @Get(':id/push-configs')
  async list(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string) {
    return { items: (await this.push.deliveries(t.tenantId, id)).map(deliveryView) };
  }
}
