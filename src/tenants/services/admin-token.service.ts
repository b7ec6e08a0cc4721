import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../config/app-config.js';
import { generateAdminToken, secretsEqual } from './token-crypto.js';

const ADMIN_TOKEN_PATTERN = /^adm_[A-Za-z0-9_-]{28,}$/;

/**
 * The operator's `adm_…` token: `ARBITER_ADMIN_TOKEN` when set, else the
 * content of `ARBITER_HOME/admin_token`, created (mode 0600) and printed once
 * on the first start.
 */
@Injectable()
export class AdminTokenService {
  private readonly logger = new Logger('AdminToken');
  private readonly token: string;

  constructor(
    config: AppConfig,
    // Depending on the database means the token is made only once the database is known to work.
    @InjectDataSource() _ds: DataSource,
  ) {
    this.token =
      config.adminToken ??
      (config.adminTokenPath ? this.readGiven(config.adminTokenFile) : this.loadOrCreate(config.adminTokenFile));
  }

  /** The operator's file (ARBITER_ADMIN_TOKEN_FILE, e.g. a container secret): it must exist; it is never changed. */
  private readGiven(file: string): string {
    let token: string;
    try {
      token = readFileSync(file, 'utf8').trim();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
      throw new Error(`ARBITER_ADMIN_TOKEN_FILE ${file} cannot be read (${code})`);
    }
    if (!ADMIN_TOKEN_PATTERN.test(token)) {
      throw new Error(
        `ARBITER_ADMIN_TOKEN_FILE ${file} does not hold a valid admin token ("adm_" + at least 28 characters)`,
      );
    }
    return token;
  }

  verify(candidate: string): boolean {
    return secretsEqual(candidate, this.token);
  }

  private loadOrCreate(file: string): string {
    let existing: string | undefined;
    try {
      existing = readFileSync(file, 'utf8').trim();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (existing !== undefined) {
      if (!ADMIN_TOKEN_PATTERN.test(existing)) {
        throw new Error(
          `${file} does not hold a valid admin token ("adm_" + at least 28 characters); fix or delete it`,
        );
      }
      const mode = statSync(file).mode & 0o777;
      if (mode & 0o077) {
        this.logger.warn(`${file} is readable by other users (mode ${mode.toString(8)}); tightening to 0600`);
        chmodSync(file, 0o600);
      }
      return existing;
    }
    const token = generateAdminToken();
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    // 'wx' fails if another process created it first; then use theirs.
    try {
      writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return this.loadOrCreate(file);
      throw err;
    }
    // Printed once, straight to the terminal rather than through the JSON logger.
    process.stdout.write(`\nArbiter admin token (shown once, saved to ${file} with mode 0600):\n\n    ${token}\n\n`);
    this.logger.log(`created a new admin token in ${file}`);
    return token;
  }
}
