import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Injectable } from '@nestjs/common';

/** This process's identity: the owner of the runs it holds, and the sender of its change notices. */
@Injectable()
export class InstanceIdentity {
  readonly id = `${hostname().slice(0, 32)}:${process.pid}:${randomBytes(4).toString('hex')}`;
}
