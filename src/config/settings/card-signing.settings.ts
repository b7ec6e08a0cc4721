import { TextEnv } from './setting.decorators.js';

/** Signing the agent cards Arbiter serves (A2A §8.4); see [Signed cards](a2a.md#signed-cards). */
export class CardSigningSettings {
  /**
   * The private key every served card is signed with: a PEM file (PKCS#8) or a JWK file; P-256 (ES256), RSA of
   * 2048 bits or more (RS256) or Ed25519 (EdDSA). Its `kid` is the JWK's, else its RFC 7638 thumbprint. Its
   * public half is published at `/.well-known/jwks.json`; a bad file stops the start.
   * @default unset → cards are not signed
   */
  @TextEnv('ARBITER_CARD_SIGNING_KEY_FILE', { allowed: 'a file path' }) cardSigningKeyFile?: string;

  /**
   * Public keys still published in `/.well-known/jwks.json` after a rotation (a JWKS, a JWK or PEM keys; only the
   * public halves are read), so cards signed with them verify until clients have fetched the new ones.
   * @default unset → only the current key is published
   */
  @TextEnv('ARBITER_CARD_SIGNING_PREVIOUS_KEYS_FILE', { allowed: 'a file path' })
  cardSigningPreviousKeysFile?: string;
}
