import { Global, Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { SecretBox } from './secret-box.js';
import { secretBoxOf } from './secret-keys.js';

/** Secrets at rest: the one `SecretBox`, built from the sealing keys at start (a bad key file stops the start). */
@Global()
@Module({
  providers: [{ provide: SecretBox, inject: [AppConfig], useFactory: (config: AppConfig) => secretBoxOf(config) }],
  exports: [SecretBox],
})
export class SecretsModule {}
