import { createHash } from 'node:crypto';
import { pkiUrls, type CaConfig } from '@pipeline/config';
import {
  AssertionError,
  assertionNonce,
  composeSignMessage,
  isCredentialBinding,
  isManifestBinding,
  expectedApproval,
  SACI_CONTEXT_TYPE,
  samlAuthContextXml,
  signMessageHash,
  subjectAttributes,
  validateSignMessage,
  type AssertionVerifier,
  type VerifiedAssertion,
} from '@pipeline/core/identity';
import {
  canonicalPublicKey,
  MAX_REPLACEMENTS,
  ONE_TIME_CREDENTIAL_VALIDITY_MS,
  type BatchCertificateIssuer,
  type CertificateIssuer,
  type IssuanceRegisters,
  type IssuanceState,
  type IssueCertificateInput,
  type IssueOutcome,
  type IssuedCertificate,
} from '@pipeline/core/pki';
import type {
  AuditSink,
  CertificateIssuedEvent,
  CertificateRevokedEvent,
  LoggedCertificateStore,
  LoggedIssuance,
  SignatureLog,
} from '@pipeline/core/audit';
import { clientFailureOf, PipelineError, type Hsm } from '@pipeline/core/shared';
import {
  encodeName,
  LeafCertificateTemplate,
  nameDerOf,
  pem,
  randomSerial,
  verifyCsr,
  type CertificateSigner,
} from '@pipeline/der';
import { BACKDATE_MS } from './bootstrap';
import { findCaKey, hsmSigner, parseCaChain, type CaChain } from './ca-keys';
import {
  AlreadyCertifiedError,
  AssertionAlreadyUsedError,
  CaError,
  CaNotReadyError,
  CredentialExpiredError,
  CredentialRevokedError,
  CredentialUnknownError,
  CredentialUsedError,
  KeyMismatchError,
  PublicKeyAlreadyCertifiedError,
  PublicKeyNotCanonicalError,
  RequestUnknownError,
  SerialCollisionError,
  SignerMismatchError,
} from './errors';
import type { CaCertificates, IssuedCertificateRecord, IssuedCertificateStore } from '@pipeline/core/pki';

const DAY_MS = 86_400_000;
/**
 * How far before a certificate's issuance the audit log is searched for a signature made with its key:
 * the signer's clock (the entry's timestamp) may be behind the CA's (issuedAt) by this much.
 */
const SIGNATURE_SEARCH_MARGIN_MS = 60_000;
/** Request ids are short opaque strings; anything longer is not one (and would be refused as a key). */
const MAX_REQUEST_ID_LENGTH = 256;

export type CaIssuanceConfig = Pick<
  CaConfig,
  | 'keyType'
  | 'issuingKeyLabel'
  | 'leafValidityDays'
  | 'policyOid'
  | 'pkiBaseUrl'
  | 'maxAssertionAgeSeconds'
  | 'publicKeyRegisterDays'
>;

export interface CertificateAuthorityDeps {
  readonly hsm: Hsm;
  readonly certificates: IssuedCertificateStore;
  readonly caCertificates: CaCertificates;
  readonly config: CaIssuanceConfig;
  /**
   * Verifies identity assertions (ID tokens of the trusted identity providers, request objects of the
   * registered clients): the only source of a certificate's subject.
   */
  readonly evidence: AssertionVerifier;
  /** The tamper-evident log the CA's refusals are appended to (`certificate.refused`). */
  readonly audit?: AuditSink;
  /**
   * Stores each certificate with the audit entry of its `certificate.issued` event, in one transaction
   * (per group of requests), without reading the store first: a cancelled write (a retry, a takeover, a
   * used assertion or key) is read back and answered by the same rules, its leaf dropped. So no released
   * certificate is missing from the log.
   */
  readonly logged: LoggedCertificateStore;
  /**
   * Signs the OCSP response `good` a first issuance is returned with (OcspResponder.goodAtIssuance), once
   * its certificate is stored; absent, or failing, the certificate goes without one (the signer then asks
   * the responder).
   */
  readonly ocspAtIssuance?: (serialHex: string) => Promise<Buffer>;
  /**
   * The audit log read back for the evidence a replacement needs: no `signature.made` for the request or
   * with the key of the certificate it would supersede. Without it (or without the store's serialState)
   * a takeover is never given a replacement.
   */
  readonly signatures?: SignatureLog;
  /** Epoch milliseconds; injectable for tests. */
  readonly now?: () => number;
}

const sha256Hex = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

function validRequestId(id: unknown): id is string {
  return typeof id === 'string' && id.length > 0 && id.length <= MAX_REQUEST_ID_LENGTH;
}

/**
 * A request with a sign message (its binding names the hash, or a message came): the message must
 * follow the sign message rules (the API's and the identity provider's, one function for all three;
 * SIGN_MESSAGE_INVALID, a message missing too) and be the one the binding names (its hash, computed
 * here; ASSERTION_BINDING_MISMATCH otherwise). For `documents`, the message approved is the e-service's
 * composed here with the list of the binding's documents (composeSignMessage).
 */
function checkSignMessage(input: IssueCertificateInput): void {
  const { binding } = input;
  if (binding.signMessageHash === undefined && input.signMessage === undefined) return;
  const message = validateSignMessage(input.signMessage);
  const approved = isManifestBinding(binding) ? composeSignMessage(message, binding.documents) : message;
  if (signMessageHash(approved) !== binding.signMessageHash) {
    throw new AssertionError(
      'ASSERTION_BINDING_MISMATCH',
      'the sign message is not the one the request binds (signMessageHash)',
    );
  }
}

/** An input whose proof of possession, evidence and subject checked out. */
interface Checked {
  readonly input: IssueCertificateInput;
  readonly spki: Buffer;
  readonly publicKeyHash: string;
  readonly assertionHash: string;
  readonly verified: VerifiedAssertion;
  readonly subject: ReturnType<typeof encodeName>;
  /** `subject`'s DER (nameDerOf: the same octets as the schema's, spliced). */
  readonly subjectDer: Buffer;
  /** The saci document of the certificate's Authentication Context extension (RFC 7773, ELN-0608). */
  readonly authContextXml: string;
}

const succeeded = (certificate: IssuedCertificate): IssueOutcome => ({ ok: true, certificate });
const failed = (error: unknown): IssueOutcome => ({ ok: false, error });

/**
 * Issues natural-person signing certificates for one-time keys, on evidence it checks itself and on
 * nothing stored: the CSR proves possession of the key; the identity assertion (an ID token of a trusted
 * identity provider, or a trusted client's signed request object) must verify, be recent by the CA's own
 * clock, and bind exactly this request id and what the signer is about to sign; the subject is taken
 * from it (and the CSR must name the same person); the assertion serves one request and a public key is
 * certified once, by registers written in the same transaction as the certificate. The issuing CA key
 * signs inside the HSM. A retry with the same key gets the stored certificate back.
 */
export class CertificateAuthority implements CertificateIssuer, BatchCertificateIssuer {
  private readonly now: () => number;
  private leafTemplate: LeafCertificateTemplate | undefined;

  private constructor(
    private readonly deps: CertificateAuthorityDeps,
    private readonly chain: CaChain,
    private readonly signer: CertificateSigner,
  ) {
    this.now = deps.now ?? Date.now;
  }

  /**
   * Checks the CA is usable before the first request: the certificates form a chain and the issuing key
   * on the token is the one the issuing certificate certifies. Throws CaNotReadyError otherwise.
   */
  public static async create(deps: CertificateAuthorityDeps): Promise<CertificateAuthority> {
    const chain = parseCaChain(deps.caCertificates);
    const key = await findCaKey(deps.hsm, deps.config.issuingKeyLabel, deps.config.keyType);
    if (!key || !key.spki.equals(chain.issuing.subjectPublicKeySpki)) {
      throw new CaNotReadyError('the issuing CA key on the token does not match the issuing CA certificate');
    }
    return new CertificateAuthority(
      deps,
      chain,
      hsmSigner(deps.hsm, key, chain.issuing, deps.config.keyType),
    );
  }

  /** Issuing CA, then root. */
  public get chainPem(): readonly string[] {
    return [this.chain.pems.issuingPem, this.chain.pems.rootPem];
  }

  public async issue(input: IssueCertificateInput): Promise<IssuedCertificate> {
    return certificateOf((await this.issueMany([input]))[0]);
  }

  /**
   * Certifies a batch: every item checked on its own, then one HSM signature per certificate and one
   * transaction per group with its audit entry, nothing read first (signAndRecord). Repeats within the
   * batch (an item sharing a request, assertion or key with an earlier one) wait for the others and take
   * the rules on what the store holds, on a fresh read. Outcomes are per item, in input order.
   */
  public async issueMany(inputs: readonly IssueCertificateInput[]): Promise<IssueOutcome[]> {
    const outcomes = new Array<IssueOutcome>(inputs.length);
    const checked: Array<{ index: number; checked: Checked }> = [];
    await Promise.all(
      inputs.map(async (input, index) => {
        try {
          checked.push({ index, checked: await this.check(input) });
        } catch (err) {
          outcomes[index] = failed(err);
        }
      }),
    );
    // Checks finish in any order; within the batch the earlier item wins a shared request, assertion or
    // key, as it would had the items come one by one.
    checked.sort((a, b) => a.index - b.index);
    // A one-time credential's use: its certificate released, none issued.
    await Promise.all(
      checked
        .filter((c) => credentialIdOf(c.checked) !== undefined)
        .map(async (c) => {
          outcomes[c.index] = await this.activate(c.checked).catch(failed);
        }),
    );
    const { first, repeats } = splitRepeats(checked.filter((c) => credentialIdOf(c.checked) === undefined));
    const results = await this.signAndRecord(first.map((f) => f.checked));
    await Promise.all(
      first.map(async (f, k) => {
        const result = results[k];
        outcomes[f.index] = result.ok
          ? succeeded(
              result.stored
                ? await this.withOcspResponse(f.checked.input, result.certificate)
                : result.certificate,
            )
          : result;
      }),
    );
    await Promise.all(
      repeats.map(async (r) => {
        outcomes[r.index] = await this.deps.certificates
          .lookup([this.lookupOf(r.checked)])
          .then(([state]) => this.answerFromStore(r.checked, state))
          .catch(failed);
      }),
    );
    return outcomes;
  }

  /**
   * Signs each item's leaf and writes it with its `certificate.issued` event, all of a group in one
   * transaction. A cancelled write drops its leaves (never returned, never logged): the items whose own
   * condition failed are read (one read) and answered by the rules on what the store holds (the stored
   * certificate for a retry with the same key, or a refusal, audited with the dropped serial); the others
   * of the group, and a refused one the read finds nothing against (a serial collision: once), are signed
   * and written again. `stored` marks a certificate written now (not one read back).
   */
  private async signAndRecord(
    items: readonly Checked[],
    previous: ReadonlyArray<IssuedCertificateRecord | undefined> = [],
  ): Promise<Array<IssueOutcome & { stored?: boolean }>> {
    const outcomes = new Array<IssueOutcome & { stored?: boolean }>(items.length);
    const collided = new Set<number>();
    let round = items.map((_, i) => i);
    while (round.length > 0) {
      const signed = (
        await Promise.all(
          round.map(async (i) => {
            try {
              return { i, record: await this.signLeaf(items[i], previous[i]) };
            } catch (err) {
              outcomes[i] = failed(err);
              return undefined;
            }
          }),
        )
      ).filter((s) => s !== undefined);
      let results: Awaited<ReturnType<LoggedCertificateStore['recordLogged']>>;
      try {
        results = await this.deps.logged.recordLogged(
          signed.map((s) =>
            loggedIssuance(items[s.i], s.record, this.registersOf(items[s.i]), previous[s.i]),
          ),
        );
      } catch (err) {
        signed.forEach((s) => (outcomes[s.i] = failed(err)));
        break;
      }
      const next: number[] = [];
      const refused: typeof signed = [];
      signed.forEach((s, k) => {
        if (results[k] === 'stored') outcomes[s.i] = { ...succeeded(issuedOf(s.record)), stored: true };
        else if (results[k] === 'refused') refused.push(s);
        else next.push(s.i);
      });
      if (refused.length > 0) {
        let states: IssuanceState[];
        try {
          states = await this.deps.certificates.lookup(refused.map((s) => this.lookupOf(items[s.i])));
        } catch (err) {
          refused.forEach((s) => (outcomes[s.i] = failed(err)));
          states = [];
        }
        await Promise.all(
          refused.map(async (s, k) => {
            const state = states[k];
            if (!state) return;
            if (holds(state, items[s.i])) {
              // A refused replacement is not tried again: its earlier serial was revoked, or replaced.
              const replaced = previous[s.i] !== undefined;
              outcomes[s.i] = await this.answerFromStore(
                items[s.i],
                state,
                s.record.serialHex,
                replaced,
              ).catch(failed);
            } else if (collided.has(s.i)) {
              // A fresh serial refused twice: the RNG is broken, so stop.
              outcomes[s.i] = failed(new SerialCollisionError());
            } else {
              collided.add(s.i);
              next.push(s.i);
            }
          }),
        );
      }
      if (refused.length === 0 && next.length > 0) {
        // Cancelled with no item refused: not the store's contract; nothing is known to be stored.
        const err = new PipelineError(
          'the certificate store cancelled a write without refusing any item',
          'CA_WRITE_CANCELLED',
        );
        next.forEach((i) => (outcomes[i] = failed(err)));
        break;
      }
      round = next.sort((a, b) => a - b);
    }
    return outcomes;
  }

  /**
   * The proof of possession, then the evidence: a request id bound by the assertion, the CSR's key of
   * the type it binds, the assertion verified (signature, issuer or client, audience, level of assurance,
   * a login made for this token, its nonce against what is about to be signed, its age by the CA's own
   * clock), and the CSR naming the person the assertion names. Refusals are audited.
   */
  private async check(input: IssueCertificateInput): Promise<Checked> {
    const csr = verifyCsr(input.csrDer);
    // The key, not its bytes: registered, hashed, certified and logged in its one canonical encoding.
    const key = canonicalPublicKey(csr.publicKeySpki);
    const publicKeyHash = key?.hash ?? sha256Hex(csr.publicKeySpki);
    const assertionHash = typeof input.assertion === 'string' ? sha256Hex(input.assertion) : undefined;
    try {
      const binding = input.binding;
      if (
        !validRequestId(input.requestId) ||
        binding?.requestId?.toLowerCase() !== input.requestId.toLowerCase()
      ) {
        throw new RequestUnknownError();
      }
      // Another encoding of a key hashes as another key: refused, and logged under the key's own hash.
      if (!key?.canonical) throw new PublicKeyNotCanonicalError();
      if (csr.keyType !== binding.keyType) throw new KeyMismatchError(binding.keyType, csr.keyType);
      checkSignMessage(input);
      if (!assertionHash) {
        throw new AssertionError(
          'IDENTITY_ASSERTION_REQUIRED',
          'no identity assertion came with the request',
        );
      }
      const verified = await this.deps.evidence.verify(input.assertion, assertionNonce(binding), {
        maxAgeSeconds: this.deps.config.maxAssertionAgeSeconds,
        approval: expectedApproval(binding),
      });
      const attributes = subjectAttributes(verified.signer);
      const subjectDer = nameDerOf(attributes);
      if (!subjectDer.equals(csr.subjectDer)) throw new SignerMismatchError();
      const subject = encodeName(attributes);
      const authContextXml = samlAuthContextXml(verified.authContext);
      return {
        input,
        spki: key.spki,
        publicKeyHash,
        assertionHash,
        verified,
        subject,
        subjectDer,
        authContextXml,
      };
    } catch (err) {
      if (clientFailureOf(err).kind === 'refused') {
        await this.logRefusal(input.requestId, err as PipelineError, publicKeyHash, assertionHash);
      }
      throw err;
    }
  }

  /**
   * The rules on what the store already holds: the same key again is a retry (the stored certificate);
   * a key certified before, or an assertion certified for another request, is refused; another key for a
   * request that has a certificate is refused (the certificate was released to its attempt when it was
   * issued), with one exception: an attempt that took the request over gets a replacement when the
   * evidence shows the certificate signed nothing that left the service (see replacementRefusal), and
   * the earlier serial is revoked `superseded` in the same write (one approval, one valid certificate).
   * Refusals are outcomes (audited, with the `dropped` serial of a write they cancelled); a failure to
   * decide (the log unreadable) throws.
   */
  private async answerFromStore(
    checked: Checked,
    state: IssuanceState,
    dropped?: string,
    noReplacement = false,
  ): Promise<IssueOutcome> {
    const { existing, assertionUse, publicKeyUse } = state;
    const { input } = checked;
    if (existing && existing.publicKeyHash === checked.publicKeyHash) return succeeded(issuedOf(existing));
    if (publicKeyUse) return this.refuse(checked, new PublicKeyAlreadyCertifiedError(), dropped);
    if (assertionUse && assertionUse.requestId !== input.requestId) {
      return this.refuse(checked, new AssertionAlreadyUsedError(), dropped);
    }
    if (!existing) return withoutStored((await this.signAndRecord([checked]))[0]);
    const takeover = input.attemptId !== undefined && existing.attemptId !== input.attemptId;
    if (!takeover) return this.refuse(checked, new AlreadyCertifiedError(), dropped);
    const refusal = noReplacement
      ? 'its certificate was revoked or replaced meanwhile'
      : await this.replacementRefusal(existing);
    if (refusal === undefined) return withoutStored((await this.signAndRecord([checked], [existing]))[0]);
    return this.refuse(
      checked,
      new AlreadyCertifiedError(
        `the sign request has a certificate that was released to be signed with (${refusal})`,
      ),
      dropped,
    );
  }

  /**
   * Why a takeover may not replace the request's certificate, or undefined when it may: the evidence that
   * no signature made with it left the service. A signer appends `signature.made` (request, key) to the
   * audit log before it stores the result that carries the signature, and only the attempt that owns the
   * request can store it, so no such event since the certificate's issuance (read back from every chain)
   * means none left; the taking over already ended the dead attempt's ownership. Also: at most
   * MAX_REPLACEMENTS per request, and never a revoked serial (no revocation is undone by a new
   * certificate). The write checks the last two again, atomically.
   */
  private async replacementRefusal(existing: IssuedCertificateRecord): Promise<string | undefined> {
    const { signatures, certificates } = this.deps;
    if ((existing.replacements ?? 0) >= MAX_REPLACEMENTS) return `it was replaced ${MAX_REPLACEMENTS} times`;
    if (!signatures || !certificates.serialState) return 'this CA replaces none';
    if ((await certificates.serialState(existing.serialHex)) !== 'valid') return 'it is revoked';
    const made = await signatures.signatureMade({
      requestId: existing.requestId,
      keySpkiHash: existing.publicKeyHash,
      since: existing.issuedAt - SIGNATURE_SEARCH_MARGIN_MS,
    });
    return made ? 'a signature was made with it' : undefined;
  }

  /**
   * A request that signs with a one-time credential's key: no certificate is issued. The credential's
   * certificate (issued for its creating request, on the first login) is released to this request when
   * the second login, checked like any (the nonce binds this request, its hashes and the credential),
   * names the same person, the CSR proves the same key, the certificate is neither expired nor revoked,
   * and no other request had it: the record and the `credential.activated` event written in one
   * transaction (recordActivation). The same request again gets it again.
   */
  private async activate(checked: Checked): Promise<IssueOutcome> {
    const { certificates, logged } = this.deps;
    const { input } = checked;
    const credentialRequestId = credentialIdOf(checked)!;
    const lookup = { ...this.lookupOf(checked), requestId: credentialRequestId };
    const [state] = await certificates.lookup([lookup]);
    const credential = state?.existing;
    const now = this.now();
    const refusal = (): CaError | undefined => {
      if (!credential || credential.publicKeyHash !== checked.publicKeyHash) {
        return new CredentialUnknownError('the CA certified no one-time credential with this key');
      }
      if (credential.subjectHash !== sha256Hex(checked.subjectDer)) return new SignerMismatchError();
      if (state.assertionUse && state.assertionUse.requestId !== input.requestId) {
        return new AssertionAlreadyUsedError();
      }
      if (credential.activatedBy !== undefined && credential.activatedBy !== input.requestId) {
        return new CredentialUsedError();
      }
      if (credential.notAfter <= now) return new CredentialExpiredError();
      return undefined;
    };
    const refused = refusal();
    if (refused) return this.refuse(checked, refused);
    if (credential!.activatedBy === input.requestId) return succeeded(issuedOf(credential!));
    if (!logged.recordActivation || !certificates.serialState) {
      return this.refuse(checked, new CredentialUnknownError('this CA releases no one-time credentials'));
    }
    if ((await certificates.serialState(credential!.serialHex)) !== 'valid') {
      return this.refuse(checked, new CredentialRevokedError());
    }
    const registers = this.registersOf(checked);
    const stored = await logged.recordActivation({
      credentialRequestId,
      requestId: input.requestId,
      serialHex: credential!.serialHex,
      ...(input.attemptId === undefined ? {} : { attemptId: input.attemptId }),
      assertionKey: registers.assertionKey,
      assertionExpiresAt: registers.assertionExpiresAt,
      activatedAt: now,
      event: {
        type: 'credential.activated',
        requestId: input.requestId,
        credentialRequestId,
        serial: credential!.serialHex,
        keySpkiHash: checked.publicKeyHash,
        assertionHash: checked.assertionHash,
      },
    });
    if (stored) return succeeded(issuedOf(credential!));
    // Another request, a revocation or another use of the assertion came first: decided on a fresh read.
    const [again] = await certificates.lookup([lookup]);
    if (again?.existing?.activatedBy === input.requestId) return succeeded(issuedOf(again.existing));
    if (again?.existing?.activatedBy !== undefined) return this.refuse(checked, new CredentialUsedError());
    if (again?.assertionUse && again.assertionUse.requestId !== input.requestId) {
      return this.refuse(checked, new AssertionAlreadyUsedError());
    }
    return this.refuse(checked, new CredentialRevokedError());
  }

  /** A refusal of a checked request: audited, then returned. */
  private async refuse(checked: Checked, err: CaError, serialHex?: string): Promise<IssueOutcome> {
    await this.logRefusal(
      checked.input.requestId,
      err,
      checked.publicKeyHash,
      checked.assertionHash,
      serialHex,
    );
    return failed(err);
  }

  /** The refusal in the audit log (best effort: the refusal stands whether or not it is logged). */
  private async logRefusal(
    requestId: unknown,
    err: PipelineError,
    publicKeyHash: string,
    assertionHash: string | undefined,
    serialHex?: string,
  ): Promise<void> {
    if (!this.deps.audit || !validRequestId(requestId) || !/^[A-Za-z0-9._:-]{1,128}$/.test(requestId)) return;
    await this.deps.audit
      .append({
        type: 'certificate.refused',
        requestId,
        code: err.code,
        keySpkiHash: publicKeyHash,
        ...(assertionHash ? { assertionHash } : {}),
        ...(serialHex ? { serial: serialHex } : {}),
      })
      .catch(() => undefined);
  }

  private lookupOf(checked: Checked) {
    return {
      requestId: checked.input.requestId,
      assertionKey: checked.verified.replayKey,
      publicKeyHash: checked.publicKeyHash,
    };
  }

  private registersOf(checked: Checked): IssuanceRegisters {
    const { config } = this.deps;
    const now = Math.floor(this.now() / 1000);
    return {
      assertionKey: checked.verified.replayKey,
      // After this the CA refuses the assertion as stale anyway (plus a day of margin for clock skew).
      assertionExpiresAt:
        Math.floor(checked.verified.issuedAt / 1000) + config.maxAssertionAgeSeconds + 86_400,
      publicKeyExpiresAt: now + config.publicKeyRegisterDays * 86_400,
    };
  }

  /** Builds and signs the leaf certificate of a checked request (storing it is another step). */
  private async signLeaf(
    checked: Checked,
    previous?: IssuedCertificateRecord,
  ): Promise<IssuedCertificateRecord> {
    const config = this.deps.config;
    const { input, spki } = checked;
    const urls = pkiUrls(config.pkiBaseUrl);
    const now = this.now();
    const notBefore = now - BACKDATE_MS;
    // A leaf never outlives its issuer; a one-time credential's lives the minutes of its two logins.
    const notAfter = Math.min(
      isCredentialBinding(input.binding)
        ? now + ONE_TIME_CREDENTIAL_VALIDITY_MS
        : notBefore + config.leafValidityDays * DAY_MS,
      this.chain.issuing.notAfter.getTime(),
    );
    const serial = randomSerial();
    // The fixed DER of every leaf (issuer, extensions but SKI and AuthContext) encoded once: the same
    // bytes as signCertificate with leafExtensions (certificate-template.test.ts).
    this.leafTemplate ??= new LeafCertificateTemplate(
      {
        issuerKeyIdentifier: this.chain.issuing.keyIdentifier,
        policyOid: config.policyOid,
        crlUrl: urls.issuingCrl,
        caIssuersUrl: urls.issuingCertificate,
        ocspUrl: urls.ocsp,
      },
      this.signer,
    );
    const der = await this.leafTemplate.sign(
      {
        serial,
        subject: checked.subject,
        subjectDer: checked.subjectDer,
        subjectPublicKeySpki: spki,
        notBefore: new Date(notBefore),
        notAfter: new Date(notAfter),
        // Built from the assertion this CA verified itself (check), never from the request record.
        authContexts: [{ contextType: SACI_CONTEXT_TYPE, contextInfo: checked.authContextXml }],
      },
      this.signer.sign,
    );
    return {
      serialHex: serial.toString('hex'),
      requestId: input.requestId,
      subjectHash: sha256Hex(checked.subjectDer),
      publicKeyHash: checked.publicKeyHash,
      assertionHash: checked.assertionHash,
      // Seconds precision, as in the certificate.
      notBefore: Math.floor(notBefore / 1000) * 1000,
      notAfter: Math.floor(notAfter / 1000) * 1000,
      issuedAt: now,
      certificatePem: pem('CERTIFICATE', der),
      chainPem: this.chainPem,
      // Released to its attempt as it is recorded: the request gets no other certificate after it (but
      // a takeover's replacement, see replacementRefusal).
      ...(input.attemptId === undefined ? {} : { attemptId: input.attemptId }),
      releasedAt: now,
      ...(previous === undefined
        ? {}
        : { supersedes: previous.serialHex, replacements: (previous.replacements ?? 0) + 1 }),
    };
  }

  /** A just stored certificate with its OCSP response `good`, when one can be made (best effort). */
  private async withOcspResponse(
    input: IssueCertificateInput,
    issued: IssuedCertificate,
  ): Promise<IssuedCertificate> {
    if (!input.ocspResponse || !this.deps.ocspAtIssuance) return issued;
    try {
      const der = await this.deps.ocspAtIssuance(issued.serialHex);
      return { ...issued, ocspResponse: der.toString('base64') };
    } catch {
      return issued;
    }
  }
}

/** The one-time credential (its creating request id) whose key a request signs with, if any. */
function credentialIdOf(checked: Checked): string | undefined {
  const { binding } = checked.input;
  return isCredentialBinding(binding) ? undefined : binding.credentialId;
}

/** What a caller gets of a stored certificate. */
function issuedOf(record: IssuedCertificateRecord): IssuedCertificate {
  return {
    certificatePem: record.certificatePem,
    chainPem: [...record.chainPem],
    serialHex: record.serialHex,
  };
}

/** True when the store holds something that decides the request (see answerFromStore). */
function holds(state: IssuanceState, checked: Checked): boolean {
  const { existing, assertionUse, publicKeyUse } = state;
  return (
    existing !== undefined ||
    publicKeyUse !== undefined ||
    (assertionUse !== undefined && assertionUse.requestId !== checked.input.requestId)
  );
}

/** A written-now mark dropped: a certificate decided by the store's rules gets no OCSP response. */
function withoutStored(outcome: IssueOutcome & { stored?: boolean }): IssueOutcome {
  return outcome.ok ? succeeded(outcome.certificate) : outcome;
}

function certificateOf(outcome: IssueOutcome): IssuedCertificate {
  if (outcome.ok) return outcome.certificate;
  throw outcome.error;
}

function loggedIssuance(
  checked: Checked,
  record: IssuedCertificateRecord,
  registers: IssuanceRegisters,
  previous?: IssuedCertificateRecord,
): LoggedIssuance {
  return {
    record: { certificate: record, registers },
    event: issuedEvent(checked, record),
    ...(previous ? { revoked: supersededEvent(previous) } : {}),
  };
}

/** The revocation of a certificate a takeover's replaced: its serial, `superseded`, its request. */
function supersededEvent(previous: IssuedCertificateRecord): CertificateRevokedEvent {
  return {
    type: 'certificate.revoked',
    serial: previous.serialHex,
    reason: 'superseded',
    requestId: previous.requestId,
  };
}

/** The audit event of an issuance: serial, subject hash, the certified key and the assertion behind it. */
function issuedEvent(checked: Checked, record: IssuedCertificateRecord): CertificateIssuedEvent {
  return {
    type: 'certificate.issued',
    requestId: record.requestId,
    serial: record.serialHex,
    subjectHash: record.subjectHash,
    assertionHash: checked.assertionHash,
    keySpkiHash: checked.publicKeyHash,
    ...(checked.input.binding.signMessageHash === undefined
      ? {}
      : { signMessageHash: checked.input.binding.signMessageHash }),
  };
}

/**
 * A batch's items in order, split into the first of each request, assertion and key, and the repeats
 * (an item sharing any of them with an earlier one), which are decided after the others are stored.
 */
function splitRepeats<T extends { readonly checked: Checked }>(
  items: readonly T[],
): { first: T[]; repeats: T[] } {
  const seen = new Set<string>();
  const first: T[] = [];
  const repeats: T[] = [];
  for (const c of items) {
    const keys = [
      `r:${c.checked.input.requestId}`,
      `a:${c.checked.verified.replayKey}`,
      `k:${c.checked.publicKeyHash}`,
    ];
    if (keys.some((key) => seen.has(key))) repeats.push(c);
    else {
      keys.forEach((key) => seen.add(key));
      first.push(c);
    }
  }
  return { first, repeats };
}
