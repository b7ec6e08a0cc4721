import { aadOf } from '../secrets/secret-box.js';
import type { SealedColumn } from '../secrets/sealed-columns.js';

/** The secret fields of a push config. */
export type PushSecretField = 'token' | 'credentials';

/**
 * A push config's secret is bound to its tenant, task, config id and field: sealed for one config, it opens for no
 * other (nor as the other field).
 */
export function pushSecretAad(tenantId: string, taskId: string, configId: string, field: PushSecretField): string {
  return aadOf('push_configs', tenantId, taskId, configId, field);
}

const column = (field: PushSecretField): SealedColumn => ({
  table: 'push_configs',
  id: 'id',
  reads: ['tenant_id', 'task_id', 'config_id'],
  column: field,
  aad: (row) => pushSecretAad(row.tenant_id ?? '', row.task_id ?? '', row.config_id ?? '', field),
});

/** The webhook token (`X-A2A-Notification-Token`) and the `Authorization` credentials of push configs. */
export const PUSH_SEALED_COLUMNS: readonly SealedColumn[] = [column('token'), column('credentials')];
