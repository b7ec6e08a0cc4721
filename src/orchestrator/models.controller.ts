import { RequireScope } from '../common/auth.decorators.js';
import { Controller, Get } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { ModelRouter } from './providers/model-router.service.js';
import { ApiTags } from '@nestjs/swagger';

/** `GET /v1/models`: what this server can run. */
@ApiTags('models')
@Controller('v1/models')
export class ModelsController {
  constructor(
    private readonly router: ModelRouter,
    private readonly config: AppConfig,
  ) {}

  @RequireScope('agents:read', 'agents:write')
  @Get()
  list() {
    return {
      default_model: this.config.defaultModel,
      providers: this.router.configured().map((name) => ({
        name,
        models: name === 'echo' ? ['echo'] : [`${name}/<model>`],
        placeholder: name === 'echo',
      })),
    };
  }
}
