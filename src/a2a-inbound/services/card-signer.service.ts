import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { JWK } from 'jose';
import { AppConfig } from '../../config/app-config.js';
import {
  readPublicKeys,
  readSigningKey,
  type CardSigningKey,
  type PublicCardKey,
} from '../../common/card-signing/card-keys.js';
import { signedForms, signPayload, type CardSignature } from '../../common/card-signing/card-signature.js';

type Json = Record<string, unknown>;

/** Signatures kept per replica, by the hash of what was signed: a card read again is not signed again. */
const MAX_CACHED = 1024;

export const JWKS_PATH = '/.well-known/jwks.json';

/**
 * Signs every card Arbiter serves (A2A §8.4) with `ARBITER_CARD_SIGNING_KEY_FILE`, and publishes the public
 * keys (current and `ARBITER_CARD_SIGNING_PREVIOUS_KEYS_FILE`) as the JWKS at `/.well-known/jwks.json`. A card
 * is signed over its canonical form (see `signedForms`); the signatures are cached by the hash of the protected
 * header's inputs and the canonical bytes (a bounded LRU), so repeated reads cost a canonicalisation, not a
 * signature, and an ES256 card keeps one signature — and one ETag — on this replica.
 */
@Injectable()
export class CardSigner implements OnModuleInit {
  private readonly logger = new Logger('CardSigning');
  private current?: CardSigningKey;
  private previous: PublicCardKey[] = [];
  private readonly cache = new Map<string, Promise<CardSignature[]>>();

  constructor(private readonly config: AppConfig) {}

  /** A missing, unreadable or unsuitable key file stops the start. */
  async onModuleInit(): Promise<void> {
    const keyFile = this.config.cardSigningKeyFile;
    if (keyFile) this.current = await this.read('ARBITER_CARD_SIGNING_KEY_FILE', keyFile, readSigningKey);
    const previousFile = this.config.cardSigningPreviousKeysFile;
    if (previousFile) {
      this.previous = await this.read('ARBITER_CARD_SIGNING_PREVIOUS_KEYS_FILE', previousFile, readPublicKeys);
    }
    if (this.current) {
      this.logger.log(
        { kid: this.current.kid, alg: this.current.alg, previous: this.previous.length },
        'cards are signed',
      );
    }
  }

  private async read<T>(env: string, file: string, parse: (text: string) => Promise<T>): Promise<T> {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(`${env} ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`);
    }
    try {
      return await parse(text);
    } catch (err) {
      throw new Error(`${env} ${file}: ${(err as Error).message}`);
    }
  }

  /** The published keys: the current one first, then the previous ones (a kid listed once). */
  jwks(): { keys: JWK[] } {
    const keys = this.current ? [this.current.publicJwk] : [];
    for (const k of this.previous) if (!keys.some((j) => j.kid === k.kid)) keys.push(k.jwk);
    return { keys };
  }

  /** The card with its `signatures` (replacing any), or the card as it is when no key is configured. */
  async sign(card: Json, base: string): Promise<Json> {
    const key = this.current;
    if (!key) return card;
    const { signatures: _old, ...unsigned } = card;
    const jku = `${base}${JWKS_PATH}`;
    const forms = signedForms(unsigned);
    const id = createHash('sha256')
      .update(`${key.kid}\n${jku}\n${forms.join('\n')}`)
      .digest('base64url');
    let signing = this.cache.get(id);
    if (signing) {
      this.cache.delete(id);
    } else {
      signing = Promise.all(forms.map((form) => signPayload(form, key, jku)));
      signing.catch(() => this.cache.delete(id));
      if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value as string);
    }
    this.cache.set(id, signing);
    return { ...unsigned, signatures: await signing };
  }
}
