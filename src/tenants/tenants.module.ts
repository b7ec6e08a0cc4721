import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AccessGuard, BearerGuard } from './auth/access.guard.js';
import { BearerAuthenticator } from './auth/bearer.strategies.js';
import { MeController } from './controllers/me.controller.js';
import { IssuerDirectory } from './identity/issuer-directory.service.js';
import { JwtPrincipals } from './identity/jwt-principals.service.js';
import { AuditRepository } from './repositories/audit.repository.js';
import { TenantRepository } from './repositories/tenant.repository.js';
import { AdminTokenService } from './services/admin-token.service.js';
import { AuditLog } from './services/audit-log.service.js';
import { OpenStreams } from './services/open-streams.service.js';
import { OperatorTokens } from './services/operator-tokens.service.js';
import { TenantAuthService } from './services/tenant-auth.service.js';
import { TenantsService } from './services/tenants.service.js';

@Module({
  controllers: [MeController],
  providers: [
    TenantRepository,
    AuditRepository,
    AdminTokenService,
    AuditLog,
    TenantAuthService,
    TenantsService,
    OpenStreams,
    OperatorTokens,
    IssuerDirectory,
    JwtPrincipals,
    BearerAuthenticator,
    BearerGuard,
    { provide: APP_GUARD, useClass: AccessGuard },
  ],
  exports: [
    TenantsService,
    TenantAuthService,
    OpenStreams,
    AuditLog,
    AdminTokenService,
    OperatorTokens,
    IssuerDirectory,
    BearerGuard,
  ],
})
export class TenantsModule {}
