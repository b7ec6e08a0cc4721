import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import {
  ENV_NAME,
  httpUrl,
  isObject,
  RegistryFileError,
  resolveEnvRefs,
} from '../common/registry-file/registry-fields.js';
import { OUTBOUND_AUTH_TYPES, type OAuthClient, type OutboundAuth, type TlsIdentity } from './outbound-auth.types.js';

/** Where an `auth` object comes from: the operator's files may name host variables and files, nothing else may. */
export interface AuthSource {
  /** Host variables for `*_env` fields (an operator's file only). */
  env?: NodeJS.ProcessEnv;
  /** The directory relative `*_file` paths start from (an operator's file only). */
  baseDir?: string;
}

/** An `auth` object read: the credential, and the host variables it names that are not set. */
export interface ParsedAuth {
  auth: OutboundAuth;
  missingEnv: string[];
}

const FIELDS: Record<OutboundAuth['type'], string[]> = {
  none: [],
  bearer: ['token', 'token_env'],
  header: ['name', 'value', 'value_env'],
  oauth2_client_credentials: [
    ...['token_url', 'client_id', 'client_secret', 'client_secret_env'],
    ...['scopes', 'audience', 'resource', 'client_auth'],
  ],
  mtls: ['cert', 'key', 'ca', 'cert_file', 'key_file', 'ca_file'],
  token_exchange: [
    ...['token_url', 'client_id', 'client_secret', 'client_secret_env'],
    ...['scopes', 'audience', 'resource', 'client_auth', 'actor_token'],
  ],
};
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
/** Headers a credential may not set: the transport's own, and those that would change what the request means. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'cookie',
]);
const TOKEN = /^[\x21-\x7e]{1,4096}$/;
const TEXT = /^[\x20-\x7e]{1,1024}$/;

/**
 * `"auth"` of a registry entry: `{"type": "bearer" (the default), "token" | "token_env"}`, `header`,
 * `oauth2_client_credentials`, `mtls` or `token_exchange` (see docs/agents-and-tools.md). The first problem is a
 * `RegistryFileError` naming the field; a value is never quoted.
 */
export function readOutboundAuth(raw: unknown, at: string, source: AuthSource): ParsedAuth {
  if (!isObject(raw)) throw new RegistryFileError(`${at} must be an object`);
  const type = raw.type ?? 'bearer';
  if (typeof type !== 'string' || !(OUTBOUND_AUTH_TYPES as readonly string[]).includes(type)) {
    throw new RegistryFileError(`${at}.type must be one of ${OUTBOUND_AUTH_TYPES.join(', ')}`);
  }
  const t = type as OutboundAuth['type'];
  for (const k of Object.keys(raw)) {
    if (k !== 'type' && !FIELDS[t].includes(k)) throw new RegistryFileError(`${at}: unknown field "${k}" for ${t}`);
  }
  const missingEnv: string[] = [];
  const secret = (field: string, pattern: RegExp, required: boolean): string => {
    const value = oneOf(raw, field, at, source, pattern, required, missingEnv);
    return value ?? '';
  };
  switch (t) {
    case 'none':
      return { auth: { type: 'none' }, missingEnv };
    case 'bearer': {
      const token = secret('token', TOKEN, true);
      return { auth: { type: 'bearer', token }, missingEnv };
    }
    case 'header': {
      const name = raw.name;
      if (typeof name !== 'string' || !HEADER_NAME.test(name) || RESERVED_HEADERS.has(name.toLowerCase())) {
        throw new RegistryFileError(`${at}.name must be a header name (not ${[...RESERVED_HEADERS].join(', ')})`);
      }
      return { auth: { type: 'header', name: name.toLowerCase(), value: secret('value', TOKEN, true) }, missingEnv };
    }
    case 'oauth2_client_credentials':
      return { auth: { type: t, ...oauthClient(raw, at, secret) }, missingEnv };
    case 'token_exchange': {
      if (raw.actor_token !== undefined && typeof raw.actor_token !== 'boolean') {
        throw new RegistryFileError(`${at}.actor_token must be true or false`);
      }
      return { auth: { type: t, actorToken: raw.actor_token === true, ...oauthClient(raw, at, secret) }, missingEnv };
    }
    case 'mtls':
      return { auth: { type: 'mtls', tls: tlsIdentity(raw, at, source) }, missingEnv };
  }
}

/** `field` given inline or as `field_env` (an operator's file only): exactly one of them when required. */
function oneOf(
  raw: Record<string, unknown>,
  field: string,
  at: string,
  source: AuthSource,
  pattern: RegExp,
  required: boolean,
  missingEnv: string[],
): string | undefined {
  const inline = raw[field];
  const ref = raw[`${field}_env`];
  if (inline !== undefined && ref !== undefined) {
    throw new RegistryFileError(`${at}: give ${field} or ${field}_env, not both`);
  }
  if (inline !== undefined) {
    if (typeof inline !== 'string' || !pattern.test(inline)) {
      throw new RegistryFileError(`${at}.${field} must be printable ASCII without spaces`);
    }
    return inline;
  }
  if (ref !== undefined) {
    if (!source.env) throw new RegistryFileError(`${at}.${field}_env: host variables are for the operator's files`);
    if (typeof ref !== 'string' || !ENV_NAME.test(ref)) {
      throw new RegistryFileError(`${at}.${field}_env must be an environment variable name`);
    }
    const { values, missing } = resolveEnvRefs({ v: ref }, source.env);
    if (missing.length > 0) missingEnv.push(ref);
    return values.v ?? '';
  }
  if (required) throw new RegistryFileError(`${at}: give ${field} or ${field}_env (one of them)`);
  return undefined;
}

function oauthClient(
  raw: Record<string, unknown>,
  at: string,
  secret: (field: string, pattern: RegExp, required: boolean) => string,
): OAuthClient {
  if (raw.token_url === undefined) throw new RegistryFileError(`${at}.token_url is required`);
  const tokenUrl = httpUrl(raw.token_url, `${at}.token_url`);
  if (tokenUrl.search || tokenUrl.hash) throw new RegistryFileError(`${at}.token_url must have no query or fragment`);
  const text = (field: string): string | undefined => {
    const v = raw[field];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || !TEXT.test(v)) throw new RegistryFileError(`${at}.${field} must be printable text`);
    return v;
  };
  const clientId = text('client_id');
  if (!clientId) throw new RegistryFileError(`${at}.client_id is required`);
  let scopes: string[] = [];
  if (raw.scopes !== undefined) {
    const list = typeof raw.scopes === 'string' ? raw.scopes.split(' ').filter(Boolean) : raw.scopes;
    if (
      !Array.isArray(list) ||
      list.length > 64 ||
      !list.every(
        (s) => typeof s === 'string' && /^[\x21-\x7e]{1,256}$/.test(s) && !s.includes('"') && !s.includes('\\'),
      )
    ) {
      throw new RegistryFileError(`${at}.scopes must be a list of scope names (or one space-separated string)`);
    }
    scopes = list as string[];
  }
  const resource = raw.resource === undefined ? undefined : text('resource');
  if (resource !== undefined && !URL.canParse(resource)) {
    throw new RegistryFileError(`${at}.resource must be an absolute URI (RFC 8707)`);
  }
  const clientAuth = raw.client_auth ?? 'basic';
  if (clientAuth !== 'basic' && clientAuth !== 'post') {
    throw new RegistryFileError(`${at}.client_auth must be "basic" or "post"`);
  }
  const audience = text('audience');
  return {
    tokenUrl: tokenUrl.href,
    clientId,
    clientSecret: secret('client_secret', TOKEN, true),
    scopes,
    ...(audience !== undefined ? { audience } : {}),
    ...(resource !== undefined ? { resource } : {}),
    clientAuth,
  };
}

/** A client certificate is presented over TLS only: an `mtls` entry's URL must be https. */
export function checkAuthUrl(auth: OutboundAuth, url: URL, at: string): void {
  if (auth.type === 'mtls' && url.protocol !== 'https:') {
    throw new RegistryFileError(`${at}.url must be https for mtls (a client certificate is presented over TLS only)`);
  }
}

const PEM = /^-----BEGIN [A-Z0-9 ]+-----[\s\S]+-----END [A-Z0-9 ]+-----\s*$/;

/** `cert`/`key`/`ca` inline as PEM, or `cert_file`/`key_file`/`ca_file` paths (an operator's file only). */
function tlsIdentity(raw: Record<string, unknown>, at: string, source: AuthSource): TlsIdentity {
  const pem = (field: 'cert' | 'key' | 'ca', required: boolean): string | undefined => {
    const inline = raw[field];
    const file = raw[`${field}_file`];
    if (inline !== undefined && file !== undefined) {
      throw new RegistryFileError(`${at}: give ${field} or ${field}_file, not both`);
    }
    let text: unknown = inline;
    if (file !== undefined) {
      if (source.baseDir === undefined)
        throw new RegistryFileError(`${at}.${field}_file: files are for the operator's files`);
      if (typeof file !== 'string' || !file || file.includes('\0')) {
        throw new RegistryFileError(`${at}.${field}_file must be a file path`);
      }
      try {
        text = readFileSync(isAbsolute(file) ? file : resolve(source.baseDir, file), 'utf8');
      } catch (err) {
        throw new RegistryFileError(
          `${at}.${field}_file: cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
        );
      }
    }
    if (text === undefined) {
      if (required) throw new RegistryFileError(`${at}: give ${field} or ${field}_file (one of them)`);
      return undefined;
    }
    if (typeof text !== 'string' || text.length > 65_536 || !PEM.test(text.trim())) {
      throw new RegistryFileError(`${at}.${file !== undefined ? `${field}_file` : field} must hold PEM`);
    }
    return text;
  };
  const cert = pem('cert', true) ?? '';
  const key = pem('key', true) ?? '';
  checkClientCertificate(cert, key, at);
  const ca = pem('ca', false);
  return { cert, key, ...(ca ? { ca } : {}) };
}

/**
 * A client certificate that would fail every handshake is refused when it is read, saying why: not a
 * certificate, expired or not yet valid, or a key that is not its own.
 */
export function checkClientCertificate(cert: string, key: string, at: string, now = Date.now()): void {
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch {
    throw new RegistryFileError(`${at}.cert is not a valid X.509 certificate`);
  }
  const notAfter = Date.parse(x509.validTo);
  const notBefore = Date.parse(x509.validFrom);
  if (notAfter < now) {
    throw new RegistryFileError(`${at}.cert: the client certificate expired on ${new Date(notAfter).toISOString()}`);
  }
  if (notBefore > now) {
    throw new RegistryFileError(
      `${at}.cert: the client certificate is not valid before ${new Date(notBefore).toISOString()}`,
    );
  }
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch {
    throw new RegistryFileError(`${at}.key is not a valid private key (PEM)`);
  }
  if (!x509.checkPrivateKey(privateKey)) throw new RegistryFileError(`${at}.key is not the certificate's key`);
}

/** The fields of each `auth` type that hold a secret (what a tenant's stored entry keeps sealed). */
const SECRET_FIELDS: Record<OutboundAuth['type'], readonly string[]> = {
  none: [],
  bearer: ['token'],
  header: ['value'],
  oauth2_client_credentials: ['client_secret'],
  mtls: ['key'],
  token_exchange: ['client_secret'],
};

/** The secret fields a raw `auth` object (already validated) gives: those to seal, and to show only as "set". */
export function authSecretFields(raw: unknown): string[] {
  if (!isObject(raw)) return [];
  const type = (raw.type ?? 'bearer') as OutboundAuth['type'];
  return (SECRET_FIELDS[type] ?? []).filter((f) => raw[f] !== undefined);
}
