/**
 * What a relying party does with the pipeline's public PKI endpoint, through the openssl command line:
 * OCSP (POST and GET bindings, responses verified against the chain), CRL fetches and their text, and
 * `openssl verify -crl_check_all`. Shared by the end-to-end tests that revoke and attack revocation.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runOpenssl, runOpensslAsync } from '../../../verify/openssl';
import { LOCAL_DIR } from '../../../paths';

export const rootPem = readFileSync(join(LOCAL_DIR, 'ca', 'root.pem'), 'utf8');
export const issuingPem = readFileSync(join(LOCAL_DIR, 'ca', 'issuing.pem'), 'utf8');
export const chainPem = `${rootPem}${issuingPem}`;

export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export async function fetchDer(url: string): Promise<Buffer | undefined> {
  const res = await fetch(url);
  return res.ok ? Buffer.from(await res.arrayBuffer()) : undefined;
}

export const pemCrl = (der: Buffer): string =>
  `-----BEGIN X509 CRL-----\n${der.toString('base64').replace(/.{64}/g, '$&\n')}\n-----END X509 CRL-----\n`;

/** `openssl crl -text` of a DER CRL. */
export function crlText(der: Buffer): string {
  return runOpenssl(['crl', '-inform', 'DER', '-in', 'c.der', '-noout', '-text'], { 'c.der': der }).stdout;
}

/** The issuing CRL as published, once it lists every serial given (upper-case hex, as openssl prints). */
export function crlListing(pki: string, serials: readonly string[]): Promise<Buffer> {
  return until(`a CRL listing ${serials.join(', ')}`, async () => {
    const crl = await fetchDer(`${pki}/issuing.crl`);
    const text = crl && crlText(crl);
    return text && serials.every((s) => text.includes(`Serial Number: ${s}`)) ? crl : undefined;
  });
}

/** `openssl ocsp -url` (POST binding) for the certificate, verified against the chain. */
export function ocspPost(pki: string, leafPem: string) {
  return runOpensslAsync(
    [
      'ocsp',
      '-issuer',
      'issuing.pem',
      '-cert',
      'leaf.pem',
      '-url',
      `${pki}/ocsp`,
      '-CAfile',
      'chain.pem',
      '-resp_text',
    ],
    { 'issuing.pem': issuingPem, 'leaf.pem': leafPem, 'chain.pem': chainPem },
  );
}

/** The GET binding (RFC 6960 A.1): base64, then URL-encoded, in the path; verified by openssl. */
export async function ocspGet(pki: string, leafPem: string) {
  const request = runOpenssl(
    ['ocsp', '-issuer', 'issuing.pem', '-cert', 'leaf.pem', '-no_nonce', '-reqout', 'req.der'],
    { 'issuing.pem': issuingPem, 'leaf.pem': leafPem },
    ['req.der'],
  ).outputs['req.der'];
  const res = await fetch(`${pki}/ocsp/${encodeURIComponent(request.toString('base64'))}`);
  const response = Buffer.from(await res.arrayBuffer());
  return {
    contentType: res.headers.get('content-type'),
    ...runOpenssl(
      ['ocsp', '-reqin', 'req.der', '-respin', 'resp.der', '-CAfile', 'chain.pem', '-resp_text'],
      {
        'req.der': request,
        'resp.der': response,
        'chain.pem': chainPem,
      },
    ),
  };
}

export function verifyWithCrl(leafPem: string, issuingCrl: Buffer, rootCrl: Buffer) {
  return runOpenssl(
    [
      'verify',
      '-crl_check_all',
      '-CAfile',
      'chain.pem',
      '-CRLfile',
      'issuing.crl',
      '-CRLfile',
      'root.crl',
      'leaf.pem',
    ],
    {
      'chain.pem': chainPem,
      'issuing.crl': pemCrl(issuingCrl),
      'root.crl': pemCrl(rootCrl),
      'leaf.pem': leafPem,
    },
  );
}
