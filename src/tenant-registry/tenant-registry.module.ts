import { Module } from '@nestjs/common';
import { TenantsModule } from '../tenants/tenants.module.js';
import { TenantRegistryStore } from './tenant-registry.store.js';

/** Tenants' own remote agents and MCP servers, stored (the API and the `/a2a`, `/mcp` tools read them here). */
@Module({
  imports: [TenantsModule],
  providers: [TenantRegistryStore],
  exports: [TenantRegistryStore],
})
export class TenantRegistryModule {}
