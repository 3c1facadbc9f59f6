/**
 * The one-time key's certificate: its proof of possession (a CSR it signs), checked here first, then the
 * certificate from the issuer. Nothing is signed with a key before the CA certified it, so a key the CA
 * refuses has signed nothing.
 */
import { requestBindingOf } from '../identity/binding';
import type { IssuedCertificate } from '../pki/certificate-issuer';
import { levelAtLeast } from '../shared/formats';
import type { AttemptContext } from './attempt-context';

/** A key that passed the proof of possession: what the certificate will be issued for. */
export interface UsableKey {
  readonly publicKeySpki: Buffer;
  readonly csrDer: Buffer;
}

/** A usable key and the certificate the CA issued for it. */
export interface CertifiedKey extends UsableKey {
  readonly issued: IssuedCertificate;
}

/** The CA's refusal of a public key it certified before (see the CA's register of public keys). */
const KEY_ALREADY_CERTIFIED = 'PUBLIC_KEY_ALREADY_CERTIFIED';

export function isAlreadyCertified(err: unknown): boolean {
  return (err as { code?: unknown } | undefined)?.code === KEY_ALREADY_CERTIFIED;
}

/** The CSR for the signer, signed by the key in hand (its proof of possession). */
export function buildProofOfPossession(ctx: AttemptContext, publicKeySpki: Buffer): Promise<Buffer> {
  const { deps, record } = ctx;
  const key = ctx.key.handle;
  return ctx.stage('csr', () =>
    deps.buildCsr({
      subject: record.signer,
      keyType: record.keyType,
      publicKeySpki,
      sign: (digest, options) => deps.hsm.signDigest(key, digest, options),
    }),
  );
}

/**
 * The CA's own proof-of-possession check, done here first: a stored public key that is not the private
 * key's would fail it there and end the request; here it only costs that key. True without a verifier.
 */
export function proofVerifies(ctx: AttemptContext, usable: UsableKey): boolean {
  const verify = ctx.deps.verifyCsr;
  if (!verify) return true;
  try {
    verify(usable.csrDer, usable.publicKeySpki);
    return true;
  } catch {
    return false;
  }
}

/**
 * The certificate: the issuer verifies the identity assertion against what this attempt will sign and
 * takes the subject from it, never from the record or the CSR. It is released to this attempt as it is
 * issued: an attempt that takes the request over gets no other (ALREADY_CERTIFIED) unless the audit
 * log shows no signature made with it; then a replacement, the one before revoked `superseded`.
 */
export function issueCertificate(ctx: AttemptContext, usable: UsableKey): Promise<IssuedCertificate> {
  const { record } = ctx;
  return ctx.stage('issue', () =>
    ctx.deps.issuer.issue({
      requestId: record.id,
      csrDer: usable.csrDer,
      attemptId: ctx.attemptId,
      assertion: record.identityAssertion!,
      binding: requestBindingOf(record),
      ...(record.signMessage === undefined ? {} : { signMessage: record.signMessage }),
      ...(wantsLongTerm(ctx) ? { ocspResponse: true } : {}),
    }),
  );
}

/** Whether a container of this request asks for B-LT: then the CA's OCSP response is worth its signature. */
function wantsLongTerm(ctx: AttemptContext): boolean {
  return ctx.plan.documents.some((d) => d.format === 'cms' && levelAtLeast(d.level ?? 'B-B', 'B-LT'));
}
