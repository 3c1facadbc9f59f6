/**
 * Test support: independent verification with the openssl command line, so a test never trusts only the
 * code under test (or only Node's crypto) to judge a signature or a certificate.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createPublicKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DigestAlgorithm, SignatureAlgorithm } from '@pipeline/core/shared';
import { withTempDir } from './temp-dir';

/** Verifies a signature over a pre-computed digest with `openssl pkeyutl -verify`. */
export function opensslVerifyDigest(args: {
  publicKeySpki: Buffer;
  digest: Buffer;
  signature: Buffer;
  digestAlgorithm: DigestAlgorithm;
  signatureAlgorithm: SignatureAlgorithm;
}): boolean {
  return withTempDir('openssl', (dir) => {
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
  return withTempDir('openssl', (dir) => {
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

/**
 * Runs `openssl <args>` in a temporary directory holding `files`; never throws on a non-zero exit. The
 * files named in `read` are returned as they are after the command (binary outputs such as `-reqout`).
 */
export function runOpenssl(
  args: string[],
  files: Record<string, string | Buffer> = {},
  read: string[] = [],
): { ok: boolean; stdout: string; stderr: string; outputs: Record<string, Buffer> } {
  return withTempDir('openssl', (dir) => {
    for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
    const result = spawnSync('openssl', args, {
      cwd: dir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const outputs: Record<string, Buffer> = {};
    for (const name of read) {
      try {
        outputs[name] = readFileSync(join(dir, name));
      } catch {
        // absent: the command did not write it
      }
    }
    return { ok: result.status === 0, stdout: result.stdout ?? '', stderr: result.stderr ?? '', outputs };
  });
}

/**
 * runOpenssl without blocking the event loop: for commands that talk to a server in this process (the
 * local runner's OCSP responder), which a synchronous child would starve.
 */
export async function runOpensslAsync(
  args: string[],
  files: Record<string, string | Buffer> = {},
): Promise<{ ok: boolean; stdout: string; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'openssl-'));
  try {
    for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
    return await new Promise((resolve, reject) => {
      const child = spawn('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.once('error', reject);
      child.once('close', (code) => resolve({ ok: code === 0, stdout, stderr }));
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `openssl cms -verify` of a detached CMS signature (DER) over `content`, binary mode, with `rootPem` as
 * the only trust anchor (the CMS carries the leaf and issuing CA). True only on "Verification successful".
 */
export function opensslCmsVerify(args: { cms: Buffer; content: Buffer; rootPem: string }): {
  ok: boolean;
  output: string;
} {
  const result = runOpenssl(
    [
      'cms',
      '-verify',
      '-binary',
      '-inform',
      'DER',
      '-in',
      'sig.p7s',
      '-content',
      'content.bin',
      '-CAfile',
      'root.pem',
      '-purpose',
      'any',
      '-out',
      '/dev/null',
    ],
    { 'sig.p7s': args.cms, 'content.bin': args.content, 'root.pem': args.rootPem },
  );
  const output = `${result.stdout}${result.stderr}`;
  return { ok: result.ok && output.includes('Verification successful'), output };
}

/**
 * The certHash of the ESS signing-certificate-v2 attribute of a CMS (hex), read with `openssl asn1parse`:
 * the OCTET STRING that follows the attribute's OID. Undefined when the attribute is absent.
 */
export function opensslSigningCertificateV2Hash(cms: Buffer): string | undefined {
  const { stdout } = runOpenssl(['asn1parse', '-inform', 'DER', '-in', 'sig.p7s'], { 'sig.p7s': cms });
  const lines = stdout.split('\n');
  const at = lines.findIndex((l) =>
    /OBJECT\s+:(id-smime-aa-signingCertificateV2|1\.2\.840\.113549\.1\.9\.16\.2\.47)/.test(l),
  );
  if (at < 0) return undefined;
  const hash = lines.slice(at).find((l) => /OCTET STRING\s+\[HEX DUMP\]:/.test(l));
  return hash?.split('[HEX DUMP]:')[1]?.trim().toLowerCase();
}
