import { Logger } from '@nestjs/common';

// Tests that use our modules outside a running app: keep Nest's console logger quiet.
if (!process.env.TEST_LOG_LEVEL) Logger.overrideLogger(false);
