/**
 * The local SAML IdP's RSA 2048 key and self-signed certificate (PEM files, the key 0600), made with the
 * openssl command line when missing; also throwaway key pairs for tests (the test SP, an unknown signer).
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface KeyPair {
  readonly keyPem: string;
  readonly certPem: string;
}

/**
 * Writes key.pem (0600) and cert.pem into `dir` unless both exist, then reads them. The pair is made in a
 * directory of its own and renamed into place whole, so processes starting at once (tests) never mix one's
 * key with another's certificate.
 */
export function loadOrCreateKeyPair(dir: string, commonName: string): KeyPair {
  const keyFile = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  if (!existsSync(keyFile) || !existsSync(certFile)) {
    mkdirSync(dirname(dir), { recursive: true, mode: 0o700 });
    const made = mkdtempSync(`${dir}.new-`);
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-sha256', '-days', '3650'].concat([
        '-subj',
        `/CN=${commonName}`,
        '-keyout',
        join(made, 'key.pem'),
        '-out',
        join(made, 'cert.pem'),
      ]),
      { stdio: 'pipe' },
    );
    chmodSync(join(made, 'key.pem'), 0o600);
    try {
      // An empty directory left by an older run is replaced; one holding a pair wins the race.
      if (existsSync(dir) && readdirSync(dir).length === 0) rmSync(dir, { recursive: true });
      renameSync(made, dir);
    } catch {
      rmSync(made, { recursive: true, force: true });
    }
  }
  return { keyPem: readFileSync(keyFile, 'utf8'), certPem: readFileSync(certFile, 'utf8') };
}

/** A fresh key pair that no file keeps. */
export function throwawayKeyPair(commonName: string): KeyPair {
  const dir = mkdtempSync(join(tmpdir(), 'saml-key-'));
  try {
    return loadOrCreateKeyPair(dir, commonName);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The base64 body of a PEM certificate (for ds:X509Certificate). */
export function certBase64(certPem: string): string {
  return certPem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
}
