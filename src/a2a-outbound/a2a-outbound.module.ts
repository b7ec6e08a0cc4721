import { Module } from '@nestjs/common';
import { OutboundAuthModule } from '../outbound-auth/outbound-auth.module.js';
import { TenantRegistryModule } from '../tenant-registry/tenant-registry.module.js';
import { RemoteAgentsController } from './remote-agents.controller.js';
import { RemoteAgents } from './remote-agents.service.js';
import { RemoteRegistry } from './remote-registry.service.js';
import { TenantRemotes } from './tenant-remotes.service.js';

/** Outbound A2A: the remote-agent registry file, tenants' own remotes and the SDK client behind `/a2a`. */
@Module({
  imports: [OutboundAuthModule, TenantRegistryModule],
  controllers: [RemoteAgentsController],
  providers: [RemoteRegistry, TenantRemotes, RemoteAgents],
  exports: [RemoteAgents, RemoteRegistry, TenantRemotes],
})
export class A2aOutboundModule {}
