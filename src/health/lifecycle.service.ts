import { Injectable } from '@nestjs/common';

/** Process-wide lifecycle flags (readiness drops as soon as shutdown begins). */
@Injectable()
export class Lifecycle {
  shuttingDown = false;
}
