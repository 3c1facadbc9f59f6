/**
 * npm run audit -- verify [--json] [--public-key <pem file>]
 * npm run audit -- checkpoint
 *
 * Works on the configured audit table (AUDIT_TABLE_NAME, AWS_ENDPOINT_URL_DYNAMODB), or locally on the
 * table of a running `npm start`. verify exits 0 when the log is intact, 1 when it names tampering, 2 when
 * it could not run. The audit public key comes from --public-key, AUDIT_PUBLIC_KEY_FILE, the bootstrap's
 * .local/audit/audit-key.pem, or else the HSM (by AUDIT_KEY_LABEL).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { documentClient } from '../lambdas/adapters/aws/src';
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
import { TABLES, tableName } from '../lambdas/resources/src';
import { LOCAL_DIR } from './local/paths';
import { useRunnerEnv } from './local/runner-info';
import { useLocalHsmEnv } from './local/token';

const USAGE = 'usage: npm run audit -- verify [--json] [--public-key <pem file>] | checkpoint';

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
    if (command === 'verify') {
      const flag = rest.indexOf('--public-key');
      const localPem = join(LOCAL_DIR, 'audit', 'audit-key.pem');
      const file =
        (flag >= 0 ? rest[flag + 1] : undefined) ??
        config.publicKeyFile ??
        (existsSync(localPem) ? localPem : undefined);
      const publicKey = await loadAuditPublicKey({
        file,
        keyLabel: config.keyLabel,
        hsm: file ? undefined : await connect(),
      });
      const report = await verifyAuditStore(store, config.chains, publicKey);
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
