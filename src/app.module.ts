import { Module, type DynamicModule, type Type } from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR, APP_PIPE } from '@nestjs/core';
import { DtoValidationPipe } from './common/validation.pipe.js';
import type { AppConfig } from './config/app-config.js';
import { ConfigModule } from './config/config.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { HttpExceptionFilter } from './common/http-exception.filter.js';
import { BodyReader } from './common/body-reader.interceptor.js';
import { DatabaseModule } from './database/database.module.js';
import { ENTITIES } from './entities.js';
import { HealthModule } from './health/health.module.js';
import { A2aInboundModule } from './a2a-inbound/a2a-inbound.module.js';
import { RegistryModule } from './registry/registry.module.js';
import { TasksModule } from './tasks/tasks.module.js';
import { PushModule } from './push/push.module.js';
import { NativeApiModule } from './native-api/native-api.module.js';
import { TenantsModule } from './tenants/tenants.module.js';
import { AdminModule } from './admin/admin.module.js';
import { BudgetsModule } from './budgets/budgets.module.js';
import { ConsoleModule } from './console/console.module.js';
import { SecretsModule } from './secrets/secrets.module.js';

@Module({})
export class AppModule {
  /** The application; `optional` adds modules loaded only when configured (the gRPC binding). */
  static forRoot(config: AppConfig, optional: Type[] = []): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        MetricsModule,
        DatabaseModule.forRoot(ENTITIES),
        SecretsModule,
        HealthModule,
        TenantsModule,
        RegistryModule,
        TasksModule,
        BudgetsModule,
        PushModule,
        A2aInboundModule,
        NativeApiModule,
        AdminModule,
        ConsoleModule,
        ...optional,
      ],
      providers: [
        { provide: APP_FILTER, useClass: HttpExceptionFilter },
        // After the access guard: bodies of unauthenticated requests are never read.
        { provide: APP_INTERCEPTOR, useClass: BodyReader },
        { provide: APP_PIPE, useClass: DtoValidationPipe },
      ],
    };
  }
}
