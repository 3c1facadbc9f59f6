/**
 * npm run pki -- revoke <serial> [--reason <RFC 5280 reason>]   revoke a certificate (default: unspecified)
 * npm run pki -- status <serial>                                what the records say of a serial
 * npm run pki -- publish                                        publish the CRLs and CA certificates now
 *
 * Revocations and publications go through the CA and CRL functions (Lambda Invoke: the CA is the only
 * writer of certificate records, and it starts the CRL publication itself); `status` reads the table.
 * Locally this works against a running `npm start`; on AWS set CA_FUNCTION_NAME, CRL_FUNCTION_NAME,
 * CERTIFICATES_TABLE_NAME and the region. Exit codes: 0 done, 1 refused, 2 could not run.
 */
import { documentClient, lambdaClient } from '@pipeline/adapters/aws';
import { CertificateRepository } from '@pipeline/adapters/dynamodb';
import { CertificateRefusedError, LambdaCertificateRevoker, LambdaFunction } from '@pipeline/adapters/lambda';
import { loadAwsConfig, loadCaConfig, loadPipelineConfig } from '@pipeline/config';
import { REVOCATION_REASONS, isRevocationReason, normalizeSerial } from '@pipeline/core/pki';
import { TABLES, tableName } from '@pipeline/resources';
import { useRunnerEnv } from './local/runner-info';

const USAGE = `usage: npm run pki -- revoke <serial> [--reason ${REVOCATION_REASONS.join('|')}] | status <serial> | publish`;

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  useRunnerEnv();
  const aws = loadAwsConfig(process.env);
  if (command === 'revoke' || command === 'status') {
    const serial = normalizeSerial(rest[0] ?? '');
    if (!serial) {
      console.error(USAGE);
      return 2;
    }
    if (command === 'status') {
      const doc = documentClient(aws);
      try {
        const status = (
          await new CertificateRepository(doc, { tableName: tableName(TABLES.certificates) }).statuses([
            serial,
          ])
        ).get(serial);
        if (!status) {
          console.log(`${serial}: unknown (never issued by this CA)`);
          return 1;
        }
        const revocation = status.revocation;
        console.log(
          revocation
            ? `${serial}: revoked ${new Date(revocation.revokedAt).toISOString()} (${revocation.reason}, by ${revocation.revokedBy}); request ${status.requestId}`
            : `${serial}: good until ${new Date(status.notAfter).toISOString()}; request ${status.requestId}`,
        );
        return 0;
      } finally {
        doc.destroy();
      }
    }
    const flag = rest.indexOf('--reason');
    const reason = flag >= 0 ? rest[flag + 1] : 'unspecified';
    if (!isRevocationReason(reason)) {
      console.error(USAGE);
      return 2;
    }
    const revoker = new LambdaCertificateRevoker(
      lambdaClient(aws),
      loadPipelineConfig(process.env).revokeFunctionName,
    );
    const revoked = await revoker.revoke(serial, reason, 'operator');
    console.log(
      `${revoked.serialHex}: ${revoked.outcome === 'revoked' ? 'revoked' : 'was already revoked'} ` +
        `${new Date(revoked.revokedAt).toISOString()} (${revoked.reason}); the CRL is being published`,
    );
    return 0;
  }
  if (command === 'publish') {
    const { payload, functionError } = await new LambdaFunction(
      lambdaClient(aws),
      loadCaConfig(process.env).crlFunctionName,
    ).invoke();
    if (functionError) {
      console.error(`publication failed: ${payload}`);
      return 1;
    }
    console.log(`published: ${payload}`);
    return 0;
  }
  console.error(USAGE);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error & { code?: string }) => {
    console.error(`pki failed: ${err.name}${err.code ? ` (${err.code})` : ''}: ${err.message}`);
    process.exit(err instanceof CertificateRefusedError ? 1 : 2);
  },
);
