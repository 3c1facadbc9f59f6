/**
 * Local e-service clients' request-object keys: an EC P-256 key pair per API client, made on first use
 * and kept in the git-ignored .local/client-keys (private JWK 0600, public JWKS beside it). The service
 * trusts a client to vouch for signers only when its public JWKS is registered in IDENTITY_CLIENT_KEYS;
 * the runner registers every local client when IDENTITY_MODE=trusted-client and nothing else is set.
 * The local OpenID Provider's clients keep their signRequest keys the same way, in a directory of their
 * own (IDP_CLIENT_KEYS_DIR).
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  type JsonWebKey,
  type KeyObject,
} from 'node:crypto';
import {
  existsSync,
  linkSync,
  mkdirSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import type { ClientSigningKey } from '../client/src/signing-client';
import { LOCAL_DIR } from './paths';

const DIR = join(LOCAL_DIR, 'client-keys');
/** The local OpenID Provider's clients' keys for the signature extension's signed signRequest. */
export const IDP_CLIENT_KEYS_DIR = join(LOCAL_DIR, 'idp', 'client-keys');

export interface LocalClientKey extends ClientSigningKey {
  readonly privateKey: KeyObject;
  /** The public JWKS the service reads (file:<path> in IDENTITY_CLIENT_KEYS). */
  readonly jwksFile: string;
}

const fileName = (clientId: string): string => clientId.replace(/[^A-Za-z0-9._-]/g, '_');

export function localClientKey(clientId: string, dir: string = DIR): LocalClientKey {
  const base = join(dir, fileName(clientId));
  const privateFile = `${base}.private.jwk.json`;
  const jwksFile = `${base}.jwks.json`;
  const kid = `${fileName(clientId)}-1`;
  if (!existsSync(privateFile)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    // Made aside and linked into place: of processes racing on a first use, one key wins for all.
    const candidate = `${privateFile}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(
      candidate,
      JSON.stringify(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' })),
      {
        mode: 0o600,
      },
    );
    try {
      linkSync(candidate, privateFile);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      unlinkSync(candidate);
    }
  }
  const privateKey = createPrivateKey({
    key: JSON.parse(readFileSync(privateFile, 'utf8')) as JsonWebKey,
    format: 'jwk',
  });
  // Derived from the private key, and replaced atomically: a reader never sees a partial file.
  const jwk = { ...createPublicKey(privateKey).export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' };
  const jwks = `${JSON.stringify({ keys: [jwk] }, null, 2)}\n`;
  if (!existsSync(jwksFile) || readFileSync(jwksFile, 'utf8') !== jwks) {
    const temporary = `${jwksFile}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(temporary, jwks);
    renameSync(temporary, jwksFile);
  }
  return { privateKey, kid, alg: 'ES256', jwksFile };
}

/** IDENTITY_CLIENT_KEYS registering these clients' local keys. */
export function localClientKeysEnv(clientIds: readonly string[]): Record<string, string> {
  return {
    IDENTITY_CLIENT_KEYS: JSON.stringify(
      clientIds.map((client) => ({ client, jwks: `file:${localClientKey(client).jwksFile}` })),
    ),
  };
}
