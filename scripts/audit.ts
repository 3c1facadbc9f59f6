/**
 * npm run audit -- verify [--json] [--public-key <pem file>]
 * npm run audit -- prove <requestId> [--public-key <pem file>]
 * npm run audit -- checkpoint
 *
 * Works on the configured audit table (AUDIT_TABLE_NAME, AWS_ENDPOINT_URL_DYNAMODB) and anchor store
 * (AUDIT_ANCHOR_TARGET), or locally on those of a running `npm start`.
 *
 * verify checks the chains and checkpoints, the table against the checkpoints anchored outside it
 * (truncations, rewinds, gaps, entries left uncovered longer than AUDIT_ANCHOR_MAX_LAG_SECONDS),
 * cross-checks every revocation between the certificate records, the audit log and the published CRL,
 * and names any key used for two requests and every refused attempt to have a key certified again (a
 * copy of a certified key, or one re-encoded), with the request and serial it was certified for, and
 * every request id, identity assertion and public key certified more than once (takeovers' superseded chains apart).
 * Exit 0 when all agree, 1 when something is named, 2 when it could not run.
 *
 * prove checks one signed request's receipt: the audit key's signature over its entry as chain head, its
 * leaf is the request's signature event, its entry holds the request's signature event of every signature
 * the request returned (each document's, with its hash), the inclusion
 * path leads to the entry hash, and the chain links that entry to an anchored checkpoint; exit 0 proven,
 * 1 not, 2 could not run.
 *
 * The audit public key comes from --public-key, AUDIT_PUBLIC_KEY_FILE, the bootstrap's
 * .local/audit/audit-key.pem, or else the HSM (by AUDIT_KEY_LABEL).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { documentClient } from '@pipeline/adapters/aws';
import { auditAnchorStore } from '@pipeline/adapters/anchors';
import { RequestRepository, AuditRepository, CertificateRepository } from '@pipeline/adapters/dynamodb';
import { connectHsm, type Pkcs11Hsm } from '@pipeline/adapters/hsm';
import { pkiPublisher } from '@pipeline/adapters/publish';
import {
  AuditLog,
  formatCertifications,
  formatKeyUsage,
  formatReport,
  hsmAuditSigner,
  loadAuditPublicKey,
  verifyAuditStore,
} from '@pipeline/audit';
import { caCertificateStore } from '@pipeline/adapters/parameters';
import { signerSignatures } from '@pipeline/der';
import { checkRevocations, type RevocationCheck } from '@pipeline/ca';
import { loadAuditConfig, loadAwsConfig, loadCaConfig, loadHsmConfig } from '@pipeline/config';
import {
  certifications,
  eventsOf,
  keyUsage,
  proveReceipt,
  proveReturnedSignatures,
  type ReturnedSignature,
  type StoredAuditLog,
} from '@pipeline/core/audit';
import type { SignRequestRecord } from '@pipeline/core/signing';
import { TABLES, tableName } from '@pipeline/resources';
import { LOCAL_DIR } from './local/paths';
import { useRunnerEnv } from './local/runner-info';
import { useLocalHsmEnv } from './local/token';

const USAGE =
  'usage: npm run audit -- verify [--json] [--public-key <pem file>] | prove <requestId> [--public-key <pem file>] | checkpoint';

/**
 * The signatures the request returned: the raw signature, or the signer's inside the CMS; for a request
 * with documents, each document's, with its index.
 */
function returnedSignatures(record: SignRequestRecord): ReturnedSignature[] {
  const of = (result: { signature?: string; cms?: string }): Buffer | undefined => {
    if (result.signature) return Buffer.from(result.signature, 'base64');
    return result.cms ? signerSignatures(Buffer.from(result.cms, 'base64'))[0] : undefined;
  };
  const returned: ReturnedSignature[] = [];
  for (const result of record.documentResults ?? [record]) {
    const signature = of(result);
    const documentIndex = 'index' in result ? result.index : undefined;
    if (signature) returned.push({ signature, ...(documentIndex === undefined ? {} : { documentIndex }) });
  }
  return returned;
}

/** Revocations in the records, the audit log and the published CRL; undefined without CA certificates. */
async function revocations(
  doc: ReturnType<typeof documentClient>,
  log: StoredAuditLog,
): Promise<RevocationCheck | undefined> {
  const aws = loadAwsConfig(process.env);
  const ca = loadCaConfig(process.env);
  const certificates = await caCertificateStore(ca.certsSource, aws).read();
  if (!certificates) return undefined;
  return checkRevocations({
    store: new CertificateRepository(doc, { tableName: tableName(TABLES.certificates) }),
    events: eventsOf(log),
    publishedCrl: await pkiPublisher(ca.publishTarget, aws).read('issuing.crl'),
    issuingCertificate: Buffer.from(new X509Certificate(certificates.issuingPem).raw),
    now: Date.now(),
  });
}

function formatRevocations(check: RevocationCheck | undefined): string[] {
  if (!check) return ['revocations: not checked (no CA certificates)'];
  const crl = check.crl
    ? `published CRL ${check.crl.number} (${check.crl.entries} entries, ${check.crl.thisUpdate.toISOString()})`
    : 'no published CRL';
  const lines = [
    `revocations: ${check.revoked} in the records, ${crl}` +
      (check.disagreements.length === 0 && !check.crlInvalid ? ', all agree' : ''),
  ];
  if (check.crlInvalid) lines.push(`  CRL: ${check.crlInvalid}`);
  for (const d of check.disagreements) lines.push(`  serial ${d.serialHex}: ${d.kind}: ${d.detail}`);
  return lines;
}

/** What every command works with. */
interface AuditCommandContext {
  readonly rest: readonly string[];
  readonly config: ReturnType<typeof loadAuditConfig>;
  readonly doc: ReturnType<typeof documentClient>;
  readonly store: AuditRepository;
  readonly anchors: ReturnType<typeof auditAnchorStore> | undefined;
  /** The audit public key: `--public-key`, AUDIT_PUBLIC_KEY_FILE, the local bootstrap's, or the HSM's. */
  readonly publicKey: () => Promise<Awaited<ReturnType<typeof loadAuditPublicKey>>>;
  /** The HSM session (audit key), connected on first use. */
  readonly connect: () => Promise<Pkcs11Hsm>;
}

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  useRunnerEnv(); // locally: the endpoints, tables and anchors of a running `npm start` (set values win)
  useLocalHsmEnv(); // locally: the bootstrap's SoftHSM token (set values win)
  const config = loadAuditConfig(process.env);
  const aws = loadAwsConfig(process.env);
  const doc = documentClient(aws);
  const store = new AuditRepository(doc, { tableName: tableName(TABLES.audit) });
  const anchors = config.anchorTarget ? auditAnchorStore(config.anchorTarget, aws) : undefined;
  let hsm: Pkcs11Hsm | undefined;
  const connect = async (): Promise<Pkcs11Hsm> => (hsm ??= await connectHsm(loadHsmConfig(process.env)));
  try {
    const publicKey = async (): Promise<Awaited<ReturnType<typeof loadAuditPublicKey>>> => {
      const flag = rest.indexOf('--public-key');
      const localPem = join(LOCAL_DIR, 'audit', 'audit-key.pem');
      const file =
        (flag >= 0 ? rest[flag + 1] : undefined) ??
        config.publicKeyFile ??
        (existsSync(localPem) ? localPem : undefined);
      return loadAuditPublicKey({ file, keyLabel: config.keyLabel, hsm: file ? undefined : await connect() });
    };
    const context: AuditCommandContext = { rest, config, doc, store, anchors, publicKey, connect };
    if (command === 'prove') return await prove(context);
    if (command === 'verify') return await verify(context);
    if (command === 'checkpoint') return await checkpoint(context);
    console.error(USAGE);
    return 2;
  } finally {
    await hsm?.close();
    doc.destroy();
  }
}

/** `prove <request-id>`: the request's receipt proven against the log, its anchors and the returned signature. */
async function prove({ rest, doc, store, anchors, publicKey }: AuditCommandContext): Promise<number> {
  const id = rest[0];
  if (!id || id.startsWith('--')) {
    console.error(USAGE);
    return 2;
  }
  const record = await new RequestRepository(doc, { tableName: tableName(TABLES.requests) }).get(id);
  if (!record) throw new Error(`no sign request ${id}`);
  if (!record.receipt) {
    console.log(`NOT PROVEN: request ${id} (${record.status}) carries no receipt`);
    return 1;
  }
  const proof = proveReceipt(
    record.receipt,
    await store.readAll(),
    await publicKey(),
    await anchors?.readAll(),
  );
  const steps = [...proof.steps];
  let ok = proof.ok;
  if (proof.eventText !== undefined) {
    const signatures = proveReturnedSignatures(id, proof, returnedSignatures(record));
    steps.unshift(...signatures.steps);
    ok &&= signatures.ok;
  }
  for (const line of steps) console.log(`  ${line}`);
  console.log(ok ? `proven: request ${id}` : `NOT PROVEN: request ${id}`);
  return ok ? 0 : 1;
}

/** `verify [--json]`: the chains and checkpoints, the anchors, revocations against the CRL, key usage. */
async function verify({
  rest,
  config,
  doc,
  store,
  anchors,
  publicKey,
}: AuditCommandContext): Promise<number> {
  const log = await store.readAll();
  const report = await verifyAuditStore(store, config.chains, await publicKey(), {
    log,
    anchoring: anchors && {
      anchors: await anchors.readAll(),
      now: Date.now(),
      maxLagMs: config.anchorMaxLagSeconds * 1000,
    },
  });
  const revoked = await revocations(doc, log);
  const agree = !revoked || (revoked.disagreements.length === 0 && !revoked.crlInvalid);
  const keys = keyUsage(eventsOf(log));
  const keysClean = keys.reused.length === 0 && keys.keyAttempts.length === 0;
  const certified = certifications(log);
  if (rest.includes('--json')) {
    const { reused, keyAttempts } = keys;
    const output = {
      ...report,
      revocations: revoked,
      keys: { reused, keyAttempts },
      certificates: certified,
    };
    console.log(JSON.stringify(output, null, 2));
  } else {
    const lines = [
      ...formatReport(report),
      ...formatRevocations(revoked),
      ...formatKeyUsage(keys),
      ...formatCertifications(certified),
    ];
    for (const line of lines) console.log(line);
  }
  return report.intact && agree && keysClean && certified.repeated.length === 0 ? 0 : 1;
}

/** `checkpoint`: a checkpoint signed now with the audit key, and anchored. */
async function checkpoint({ config, store, anchors, connect }: AuditCommandContext): Promise<number> {
  const signer = await hsmAuditSigner(await connect(), config.keyLabel);
  const cp = await new AuditLog(store, { chains: config.chains, signer, anchors }).checkpoint();
  console.log(
    `checkpoint ${cp.body.sequence} signed by ${signer.keyLabel}: ${cp.hash}` +
      (anchors ? `, anchored in ${anchors.location}` : ', not anchored (no AUDIT_ANCHOR_TARGET)'),
  );
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error & { code?: string }) => {
    console.error(`audit failed: ${err.name}${err.code ? ` (${err.code})` : ''}: ${err.message}`);
    process.exit(2);
  },
);
