import { Module } from '@nestjs/common';
import { OutboundCredentials } from './outbound-credentials.service.js';

/** How Arbiter authenticates to remote A2A agents and MCP servers over HTTP (one module for both). */
@Module({
  providers: [OutboundCredentials],
  exports: [OutboundCredentials],
})
export class OutboundAuthModule {}
