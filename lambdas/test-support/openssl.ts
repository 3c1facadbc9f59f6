/**
 * Test support: independent verification with the openssl command line, so a test never trusts only the
 * code under test (or only Node's crypto) to judge a signature or a certificate.
 */
import { execFileSync } from 'node:child_process';
import { createPublicKey } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DigestAlgorithm, SignatureAlgorithm } from '../core/src';

function withTempDir<T>(fn: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'openssl-'));
  try {
    return fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Verifies a signature over a pre-computed digest with `openssl pkeyutl -verify`. */
export function opensslVerifyDigest(args: {
  publicKeySpki: Buffer;
  digest: Buffer;
  signature: Buffer;
  digestAlgorithm: DigestAlgorithm;
  signatureAlgorithm: SignatureAlgorithm;
}): boolean {
  return withTempDir((dir) => {
    const pem = createPublicKey({ key: args.publicKeySpki, format: 'der', type: 'spki' }).export({
      type: 'spki',
      format: 'pem',
    });
    writeFileSync(join(dir, 'pub.pem'), pem);
    writeFileSync(join(dir, 'digest.bin'), args.digest);
    writeFileSync(join(dir, 'sig.bin'), args.signature);
    const hash = args.digestAlgorithm.replace('SHA-', 'sha');
    const opts = ['-pkeyopt', `digest:${hash}`];
    if (args.signatureAlgorithm === 'RSASSA-PKCS1-v1_5') opts.push('-pkeyopt', 'rsa_padding_mode:pkcs1');
    if (args.signatureAlgorithm === 'RSASSA-PSS') {
      opts.push('-pkeyopt', 'rsa_padding_mode:pss', '-pkeyopt', 'rsa_pss_saltlen:digest');
    }
    try {
      const out = execFileSync(
        'openssl',
        [
          'pkeyutl',
          '-verify',
          '-pubin',
          '-inkey',
          'pub.pem',
          '-in',
          'digest.bin',
          '-sigfile',
          'sig.bin',
          ...opts,
        ],
        { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
      );
      return out.includes('Signature Verified Successfully');
    } catch {
      return false;
    }
  });
}

/** `openssl verify -CAfile root -untrusted chain leaf`: true when the chain verifies. */
export function opensslVerifyChain(args: { rootPem: string; intermediatePems: string[]; leafPem: string }): {
  ok: boolean;
  output: string;
} {
  return withTempDir((dir) => {
    writeFileSync(join(dir, 'root.pem'), args.rootPem);
    writeFileSync(join(dir, 'untrusted.pem'), args.intermediatePems.join('\n'));
    writeFileSync(join(dir, 'leaf.pem'), args.leafPem);
    const params = ['verify', '-CAfile', 'root.pem'];
    if (args.intermediatePems.length > 0) params.push('-untrusted', 'untrusted.pem');
    params.push('leaf.pem');
    try {
      const output = execFileSync('openssl', params, {
        cwd: dir,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      return { ok: output.trim().endsWith('OK'), output };
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string };
      return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
    }
  });
}
