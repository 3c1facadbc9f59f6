/**
 * npm run sign -- <file> [--pdf] -o <out> [--citizen <personal number | index>] [--key-type EC-P256]
 *                  [--scheme ECDSA] [--digest SHA-256] [--level B-LT] [--minimum-level B-B]
 *                  [--message <text>] [--markdown]
 *
 * Signs a file through the signing API as an e-service does: a detached CAdES signature (`.p7s`) for any
 * file, or with --pdf a PAdES signature inside the PDF. The citizen logs in at the local identity provider
 * (a test citizen, through the scripted browser) and approves the sign message there (by default one
 * naming the file; --markdown sends it as text/markdown); against another deployment set SIGNING_API_URL,
 * SIGNING_API_KEY (and SIGNING_ACCESS_KEY_ID, SIGNING_SECRET_KEY to sign the calls, SigV4) and
 * LOCAL_IDP_ISSUER. Exit codes: 0 signed, 1 refused or failed, 2 could not run.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { basename } from 'node:path';
import { IDP_CLIENT_KEYS_DIR, localClientKey } from '../local/client-keys';
import { loadApiClients } from '../local/runner/api-keys';
import { TEST_CITIZENS } from '../local/idp/citizens';
import { CLIENT_IDS } from '../local/idp/clients';
import { readRunnerInfo } from '../local/runner-info';
import { AuthorizationError, obtainIdToken } from './src/oidc-login';
import { PdfSignatureError } from './src/pdf-signature';
import { SigningFailedError, signDocument } from './src/sign-document';
import {
  SigningApiError,
  SigningClient,
  type DigestAlgorithm,
  type KeyType,
  type SignatureAlgorithm,
  type SignatureLevel,
} from './src/signing-client';

const USAGE =
  'usage: npm run sign -- <file> [--pdf] -o <out> [--citizen <personal number|index>] [--key-type EC-P256] [--scheme ECDSA] [--digest SHA-256] [--level B-B|B-T|B-LT|B-LTA] [--minimum-level B-B] [--message <text>] [--markdown]';

function flag(args: string[], name: string): string | undefined {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
}

async function main(args: string[]): Promise<number> {
  const file = args[0];
  const out = flag(args, '-o');
  if (!file || file.startsWith('-') || !out) {
    console.error(USAGE);
    return 2;
  }
  const runner = readRunnerInfo();
  const apiUrl = process.env.SIGNING_API_URL ?? runner?.url;
  const issuer = process.env.LOCAL_IDP_ISSUER ?? runner?.env.LOCAL_IDP_ISSUER;
  if (!apiUrl || !issuer) {
    console.error(
      'no signing service to talk to: start one with `npm start` (or set SIGNING_API_URL and LOCAL_IDP_ISSUER)',
    );
    return 2;
  }
  const who = flag(args, '--citizen') ?? '0';
  const citizen = /^\d{1,2}$/.test(who)
    ? TEST_CITIZENS[Number(who)]
    : TEST_CITIZENS.find((c) => c.personalIdentityNumber === who);
  if (!citizen) {
    console.error(
      `no test citizen ${who}: give an index 0-${TEST_CITIZENS.length - 1} or one of their personal numbers`,
    );
    return 2;
  }
  const { SIGNING_ACCESS_KEY_ID: accessKeyId, SIGNING_SECRET_KEY: secretAccessKey } = process.env;
  const client = new SigningClient({
    apiUrl,
    apiKey: process.env.SIGNING_API_KEY ?? loadApiClients()[0].apiKey,
    credentials: accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : undefined,
  });
  try {
    const signed = await signDocument({
      client,
      document: readFileSync(file),
      pdf: args.includes('--pdf'),
      keyType: (flag(args, '--key-type') as KeyType | undefined) ?? 'EC-P256',
      signatureAlgorithm: flag(args, '--scheme') as SignatureAlgorithm | undefined,
      digestAlgorithm: (flag(args, '--digest') as DigestAlgorithm | undefined) ?? 'SHA-256',
      level: (flag(args, '--level') as SignatureLevel | undefined) ?? 'B-LT',
      minimumLevel: flag(args, '--minimum-level') as SignatureLevel | undefined,
      tsaUrl: process.env.TSA_URL ?? (runner ? `${runner.env.PKI_BASE_URL}/tsa` : undefined),
      signMessage: {
        text: flag(args, '--message') ?? `I sign the document ${basename(file)}.`,
        mimeType: args.includes('--markdown') ? 'text/markdown' : 'text/plain',
      },
      documentName: basename(file),
      login: async (nonce, request) =>
        (
          await obtainIdToken({
            issuer,
            clientId: CLIENT_IDS.signingService,
            personalIdentityNumber: citizen.personalIdentityNumber,
            nonce,
            ...(request.signMessage
              ? {
                  signature: {
                    key: localClientKey(CLIENT_IDS.signingService, IDP_CLIENT_KEYS_DIR),
                    tbsData: request.tbsData,
                    signMessage: request.signMessage,
                    documentName: request.documentName,
                  },
                }
              : {}),
          })
        ).idToken,
    });
    writeFileSync(out, signed.output);
    const leaf = new X509Certificate(signed.result.certificate!);
    const form = args.includes('--pdf') ? 'PAdES' : 'CAdES, detached';
    console.log(`signed ${file} -> ${out} (${form}, level ${signed.level})`);
    console.log(`  request ${signed.requestId}, certificate ${signed.result.certificateSerial}`);
    console.log(`  signer: ${leaf.subject.replace(/\n/g, ', ')}`);
    return 0;
  } catch (err) {
    if (
      err instanceof PdfSignatureError ||
      err instanceof SigningFailedError ||
      err instanceof SigningApiError ||
      err instanceof AuthorizationError
    ) {
      console.error(`not signed: ${err.code}: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(`sign failed: ${err.name}: ${err.message}`);
    process.exit(2);
  },
);
