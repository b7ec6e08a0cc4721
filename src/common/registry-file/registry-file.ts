import { readFileSync, statSync } from 'node:fs';
import { Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { RegistryFileError } from './registry-fields.js';

/** What a registry file holds once parsed: its entries by name, and what to warn about (an unset `*_env`). */
export interface RegistryContent<T> {
  entries: Map<string, T>;
  warnings: string[];
}

/** How log lines name a registry and its entries. */
export interface RegistryNames {
  /** The logger's context: `A2aRegistry`. */
  logger: string;
  /** `invalid A2A registry <path>: …` */
  registry: string;
  /** `loaded 2 remote A2A agent(s) from <path>` */
  entries: string;
  /** `keeping the previous registry (2 agent(s))` */
  entry: string;
  /** `<path> is gone: no remote agents configured` */
  none: string;
}

/**
 * An operator's registry file (`a2a_agents.json`, `mcp_servers.json`), kept
 * loaded: missing → no entries; changes are picked up without a restart
 * (checked on each use — one `stat`, so an edit is seen at once — and every
 * 2 s); a malformed file is logged with the bad field, shown in `lastError`,
 * and the last good content stays in force. A registry extends this class
 * with its names, its path and its own `parse` (its schema).
 */
export abstract class RegistryFile<T extends { name: string }> implements OnModuleInit, OnModuleDestroy {
  private readonly logger: Logger;
  private entries = new Map<string, T>();
  /** The file's identity when last read (`ino:size:mtime`), `missing`, or `''` before the first read. */
  private stamp = '';
  private timer: NodeJS.Timeout | undefined;
  /** The last load problem, for operators (`null` when the file loaded). */
  lastError: string | null = null;

  /**
   * @param locate where the file is (asked on each check)
   * @param env where `*_env` references are read
   */
  protected constructor(
    private readonly names: RegistryNames,
    private readonly locate: () => string,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.logger = new Logger(names.logger);
  }

  /**
   * Parses and validates the file's text; throws `RegistryFileError` naming the bad field. Any other error
   * is reported as "cannot read it", its message unshown (it might quote the file).
   */
  protected abstract parse(text: string, env: NodeJS.ProcessEnv, path: string): RegistryContent<T>;

  onModuleInit(): void {
    this.refresh();
    this.timer = setInterval(() => this.refresh(), 2_000);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
  }

  get path(): string {
    return this.locate();
  }

  /** Every entry, by name. */
  list(): T[] {
    this.refresh();
    return [...this.entries.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  get(name: string): T | undefined {
    this.refresh();
    return this.entries.get(name);
  }

  /** Re-reads the file if it changed. */
  refresh(): void {
    const path = this.path;
    let stamp: string;
    try {
      const st = statSync(path);
      stamp = `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        this.fail(path, `cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`, 'stat');
        return;
      }
      if (this.stamp !== 'missing') {
        if (this.entries.size > 0) this.logger.log(`${path} is gone: ${this.names.none}`);
        this.entries = new Map();
        this.stamp = 'missing';
        this.lastError = null;
      }
      return;
    }
    if (stamp === this.stamp) return;
    this.stamp = stamp;
    try {
      const { entries, warnings } = this.parse(readFileSync(path, 'utf8'), this.env, path);
      for (const w of warnings) this.logger.warn(`${path}: ${w}`);
      this.entries = entries;
      this.lastError = null;
      this.logger.log(`loaded ${entries.size} ${this.names.entries}(s) from ${path}`);
    } catch (err) {
      this.fail(path, err instanceof RegistryFileError ? err.message : 'cannot read it', stamp);
    }
  }

  private fail(path: string, problem: string, stamp: string): void {
    this.stamp = stamp;
    this.lastError = `${path}: ${problem}`;
    this.logger.error(
      `invalid ${this.names.registry} ${path}: ${problem}; keeping the previous registry (${this.entries.size} ${this.names.entry}(s))`,
    );
  }
}
