/**
 * npm run audit -- verify [--json] [--public-key <pem file>]
 * npm run audit -- prove <requestId> [--public-key <pem file>]
 * npm run audit -- checkpoint
 *
 * Works on the configured audit table (AUDIT_TABLE_NAME, AWS_ENDPOINT_URL_DYNAMODB), or locally on the
 * table of a running `npm start`. verify exits 0 when the log is intact, 1 when it names tampering, 2 when
 * it could not run. prove checks one signed request's receipt: its leaf is the request's signature event
 * (the hash of the signature the request returned), the inclusion path leads to the entry hash, and the
 * chain links that entry to a checkpoint signed by the audit key; exit 0 proven, 1 not, 2 could not run. The audit public key comes from --public-key, AUDIT_PUBLIC_KEY_FILE, the bootstrap's
 * .local/audit/audit-key.pem, or else the HSM (by AUDIT_KEY_LABEL).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import { ContentInfo, SignedData } from '@peculiar/asn1-cms';
import { documentClient } from '../lambdas/adapters/aws/src';
import { RequestRepository } from '../lambdas/adapters/dynamodb/src/request-repository';
import { AuditRepository } from '../lambdas/adapters/dynamodb/src/audit-repository';
import { connectHsm, type Pkcs11Hsm } from '../lambdas/adapters/hsm/src';
import {
  AuditLog,
  formatReport,
  hsmAuditSigner,
  loadAuditPublicKey,
  verifyAuditStore,
} from '../lambdas/audit/src';
import { loadAuditConfig, loadAwsConfig, loadHsmConfig } from '../lambdas/config/src';
import { proveReceipt, type SignRequestRecord } from '../lambdas/core/src';
import { TABLES, tableName } from '../lambdas/resources/src';
import { LOCAL_DIR } from './local/paths';
import { useRunnerEnv } from './local/runner-info';
import { useLocalHsmEnv } from './local/token';

const USAGE =
  'usage: npm run audit -- verify [--json] [--public-key <pem file>] | prove <requestId> [--public-key <pem file>] | checkpoint';

/** The signature the request returned: the raw signature, or the signer's signature inside the CMS. */
function returnedSignature(record: SignRequestRecord): Buffer | undefined {
  if (record.signature) return Buffer.from(record.signature, 'base64');
  if (!record.cms) return undefined;
  const info = AsnConvert.parse(Buffer.from(record.cms, 'base64'), ContentInfo);
  const signed = AsnConvert.parse(info.content, SignedData);
  return Buffer.from(signed.signerInfos[0].signature.buffer);
}

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  useRunnerEnv(); // locally: the endpoints and table of a running `npm start` (set values win)
  useLocalHsmEnv(); // locally: the bootstrap's SoftHSM token (set values win)
  const config = loadAuditConfig();
  const doc = documentClient(loadAwsConfig());
  const store = new AuditRepository(doc, { tableName: tableName(TABLES.audit) });
  let hsm: Pkcs11Hsm | undefined;
  const connect = async (): Promise<Pkcs11Hsm> => (hsm ??= await connectHsm(loadHsmConfig()));
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
    if (command === 'prove') {
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
      const proof = proveReceipt(record.receipt, await store.readAll(), await publicKey());
      const event =
        proof.eventText === undefined ? undefined : (JSON.parse(proof.eventText) as Record<string, string>);
      const signature = returnedSignature(record);
      const steps = [...proof.steps];
      let ok = proof.ok;
      if (event) {
        const matches =
          event.type === 'signature.made' &&
          event.requestId === id &&
          signature !== undefined &&
          event.signatureHash === createHash('sha256').update(signature).digest('hex');
        steps.unshift(
          matches
            ? `leaf: signature.made for ${id}, hash of the returned signature`
            : `FAILED: the leaf is not this request's signature event`,
        );
        ok &&= matches;
      }
      for (const line of steps) console.log(`  ${line}`);
      console.log(ok ? `proven: request ${id}` : `NOT PROVEN: request ${id}`);
      return ok ? 0 : 1;
    }
    if (command === 'verify') {
      const report = await verifyAuditStore(store, config.chains, await publicKey());
      if (rest.includes('--json')) console.log(JSON.stringify(report, null, 2));
      else for (const line of formatReport(report)) console.log(line);
      return report.intact ? 0 : 1;
    }
    if (command === 'checkpoint') {
      const signer = await hsmAuditSigner(await connect(), config.keyLabel);
      const cp = await new AuditLog(store, { chains: config.chains, signer }).checkpoint();
      console.log(`checkpoint ${cp.body.sequence} signed by ${signer.keyLabel}: ${cp.hash}`);
      return 0;
    }
    console.error(USAGE);
    return 2;
  } finally {
    await hsm?.close();
    doc.destroy();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error & { code?: string }) => {
    console.error(`audit failed: ${err.name}${err.code ? ` (${err.code})` : ''}: ${err.message}`);
    process.exit(2);
  },
);
