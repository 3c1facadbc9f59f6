/**
 * The local IdP's signing keys: a private JWK Set in a 0600 file, made at first start. RSA-2048 (RS256,
 * PS256) and EC P-256 (ES256), each with a kid. oidc-provider signs with the first key of a type that
 * fits the algorithm, so a rotation puts the new key first and keeps the old ones (still published,
 * so tokens signed before the rotation keep verifying).
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import { LOCAL_DIR } from '../paths';

export const DEFAULT_KEYS_FILE = join(LOCAL_DIR, 'idp', 'jwks.json');

export type SigningKeyType = 'RSA' | 'EC';
export const SIGNING_KEY_TYPES: readonly SigningKeyType[] = ['RSA', 'EC'];

export interface PrivateJwks {
  readonly keys: readonly JWK[];
}

export class IdpKeysFileError extends Error {
  public override readonly name = 'IdpKeysFileError';
}

export async function generateSigningKey(type: SigningKeyType): Promise<JWK> {
  const { privateKey } =
    type === 'RSA'
      ? await generateKeyPair('RS256', { modulusLength: 2048, extractable: true })
      : await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(privateKey);
  // No alg on the key: one RSA key serves RS256 and PS256. The kid is the RFC 7638 thumbprint: unique per
  // key, and anyone holding the public key can recompute it.
  return { ...jwk, kid: await calculateJwkThumbprint(jwk), use: 'sig' };
}

function parseJwks(text: string, file: string): PrivateJwks {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new IdpKeysFileError(`${file} is not JSON`);
  }
  const keys = (parsed as { keys?: unknown }).keys;
  if (!Array.isArray(keys)) throw new IdpKeysFileError(`${file} is not a JWK Set (no "keys" array)`);
  for (const key of keys as JWK[]) {
    if (typeof key !== 'object' || key === null || typeof key.kid !== 'string' || typeof key.d !== 'string') {
      throw new IdpKeysFileError(`${file} holds a key without a kid or without its private part`);
    }
  }
  return { keys: keys as JWK[] };
}

const typeOf = (key: JWK): string | undefined => key.kty;

/** Writes through a temporary file: rename replaces atomically; link creates only if still absent. */
async function writeJwks(file: string, jwks: PrivateJwks, onlyIfAbsent: boolean): Promise<boolean> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temporary, `${JSON.stringify(jwks, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  if (!onlyIfAbsent) {
    await rename(temporary, file);
    return true;
  }
  try {
    await link(temporary, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    await unlink(temporary);
  }
}

async function readJwks(file: string): Promise<PrivateJwks | undefined> {
  try {
    return parseJwks(await readFile(file, 'utf8'), file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * The key set in `file`, made when the file is missing (two processes starting at once agree on one
 * file: the second one's link fails and it reads the first one's), and completed with a key of each
 * signing type it lacks.
 */
export async function loadOrCreateSigningKeys(file: string = DEFAULT_KEYS_FILE): Promise<PrivateJwks> {
  const existing = await readJwks(file);
  if (existing === undefined) {
    const created = { keys: await Promise.all(SIGNING_KEY_TYPES.map((type) => generateSigningKey(type))) };
    if (await writeJwks(file, created, true)) return created;
    return loadOrCreateSigningKeys(file);
  }
  const missing = SIGNING_KEY_TYPES.filter((type) => !existing.keys.some((key) => typeOf(key) === type));
  if (missing.length === 0) return existing;
  const completed = { keys: [...existing.keys, ...(await Promise.all(missing.map(generateSigningKey)))] };
  await writeJwks(file, completed, false);
  return completed;
}

/**
 * Adds a fresh key of each given type in front of the older ones: a running IdP keeps signing with what
 * it loaded; after its next start the new keys sign and the old ones stay published for verification.
 * Returns the new kids.
 */
export async function rotateSigningKeys(
  file: string = DEFAULT_KEYS_FILE,
  types: readonly SigningKeyType[] = SIGNING_KEY_TYPES,
): Promise<string[]> {
  const current = await loadOrCreateSigningKeys(file);
  const fresh = await Promise.all(types.map((type) => generateSigningKey(type)));
  await writeJwks(file, { keys: [...fresh, ...current.keys] }, false);
  return fresh.map((key) => key.kid as string);
}
