import { Module } from '@nestjs/common';
import { OutboundAuthModule } from '../outbound-auth/outbound-auth.module.js';
import { RemoteAgents } from './remote-agents.service.js';
import { RemoteRegistry } from './remote-registry.service.js';

/** Outbound A2A: the remote-agent registry file and the SDK client behind `/a2a`. */
@Module({
  imports: [OutboundAuthModule],
  providers: [RemoteRegistry, RemoteAgents],
  exports: [RemoteAgents, RemoteRegistry],
})
export class A2aOutboundModule {}
