import { Injectable } from '@nestjs/common';
import { RunRegistry } from './runs/run-registry.js';

/** The runs this replica holds, counted per tenant (for the running-task caps, see `UsageService`). */
@Injectable()
export class RunCounts {
  constructor(private readonly registry: RunRegistry) {}

  /** Runs held here for the tenant. */
  of(tenantId: string): number {
    return this.registry.countsByTenant().get(tenantId) ?? 0;
  }

  /** Runs held here for each tenant that has any. */
  byTenant(): ReadonlyMap<string, number> {
    return this.registry.countsByTenant();
  }
}
