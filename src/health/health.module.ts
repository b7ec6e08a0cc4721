import { Global, Module } from '@nestjs/common';
import { HealthController } from './health.controller.js';
import { Lifecycle } from './lifecycle.service.js';

@Global()
@Module({ controllers: [HealthController], providers: [Lifecycle], exports: [Lifecycle] })
export class HealthModule {}
