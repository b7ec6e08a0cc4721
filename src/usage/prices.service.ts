import { Injectable, Logger } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { AppConfig } from '../config/app-config.js';
import { PriceBook, PriceFileError, type CallPrice } from './price-book.js';

/**
 * The operator's model prices (`ARBITER_PRICES_FILE`), read and checked once
 * at start: a file that cannot be read or holds a bad entry stops the start
 * with a message naming the entry and the field.
 */
@Injectable()
export class Prices {
  private readonly book: PriceBook;
  private readonly logger = new Logger('Prices');

  constructor(config: AppConfig) {
    this.book = config.pricesFile ? load(config.pricesFile) : PriceBook.empty();
    if (config.pricesFile) {
      this.logger.log({ entries: this.book.size, currency: this.book.currency }, 'model prices loaded');
    }
  }

  /** The currency every cost is in; null when no prices are configured. */
  get currency(): string | null {
    return this.book.currency;
  }

  /** The price in force at `at` for `provider`'s `model`, or null. */
  of(provider: string, model: string, at = Date.now()): CallPrice | null {
    return this.book.lookup(provider, model, at);
  }
}

function load(file: string): PriceBook {
  const path = resolve(file);
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    const why = err instanceof Error ? err.message : 'unreadable';
    throw new Error(`ARBITER_PRICES_FILE ${path} cannot be read as JSON (${why})`);
  }
  try {
    return PriceBook.parse(json);
  } catch (err) {
    if (err instanceof PriceFileError) throw new Error(`ARBITER_PRICES_FILE ${path}: ${err.message}`);
    throw err;
  }
}
