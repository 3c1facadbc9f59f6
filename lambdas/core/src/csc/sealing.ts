import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Sealing of what the CSC table keeps for the holder of a secret (a code, an access token, a flow's
 * state, a responseID with its token): AES-256-GCM under a key derived (HKDF-SHA256) from that secret,
 * which the table never holds (it keys items by the secret's hash). The item's key is the AAD, so a
 * sealed value moved to another item, or edited, does not open: a table reader learns nothing of the
 * grant (the citizen's ID token) and a table writer cannot make the service use a grant of their own.
 */
const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

function keyOf(secret: string): Buffer {
  return Buffer.from(
    hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.alloc(0), 'csc-table-seal-v1', 32),
  );
}

/** `v1.<base64url(iv | ciphertext | tag)>` of the JSON of `value`. */
export function seal(secret: string, itemKey: string, value: unknown): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyOf(secret), iv);
  cipher.setAAD(Buffer.from(itemKey, 'utf8'));
  const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return `${VERSION}.${Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url')}`;
}

/** The sealed value, or undefined when it is not one sealed under this secret for this item (or edited). */
export function unseal<T>(secret: string, itemKey: string, sealed: unknown): T | undefined {
  if (typeof sealed !== 'string' || !sealed.startsWith(`${VERSION}.`)) return undefined;
  const raw = Buffer.from(sealed.slice(VERSION.length + 1), 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', keyOf(secret), raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(itemKey, 'utf8'));
    decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
    const text = Buffer.concat([
      decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)),
      decipher.final(),
    ]).toString('utf8');
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}
