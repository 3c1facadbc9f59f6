/**
 * npm run sign -- <file> [--pdf] -o <out> [--citizen <personal number | index>] [--key-type EC-P256]
 *                  [--scheme ECDSA] [--digest SHA-256] [--level B-LT] [--minimum-level B-B]
 *                  [--message <text>] [--markdown]
 * npm run sign -- <file> <file>... [-o <directory>] [the same options but --pdf]
 *
 * Signs a file through the signing API as an e-service does: a detached CAdES signature (`.p7s`) for any
 * file, or with --pdf a PAdES signature inside the PDF. Several files are signed under one login, in one
 * request (one key, one certificate): each PDF (by its `%PDF-` header) as PAdES in `<name>-signed.pdf`,
 * any other file as detached CAdES in `<name>.p7s`, written into the directory (default: each file's
 * own); the citizen approves the message with the numbered list of the files. The citizen logs in at
 * the local identity provider (a test citizen, through the scripted browser) and approves the sign
 * message there (by default one naming the file; --markdown sends it as text/markdown); against another
 * deployment set SIGNING_API_URL,
 * SIGNING_API_KEY (and SIGNING_ACCESS_KEY_ID, SIGNING_SECRET_KEY to sign the calls, SigV4) and
 * LOCAL_IDP_ISSUER. Exit codes: 0 signed, 1 refused or failed, 2 could not run.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { IDP_CLIENT_KEYS_DIR, localClientKey } from './client-keys';
import { loadApiClients } from './runner/api-keys';
import { TEST_CITIZENS } from './idp/citizens';
import { CLIENT_IDS } from './idp/clients';
import { readRunnerInfo } from './runner-info';
import { AuthorizationError, obtainIdToken } from '../client/src/oidc-login';
import { PdfSignatureError } from '../client/src/pdf-signature';
import {
  SigningFailedError,
  signDocument,
  signDocuments,
  type LoginRequest,
} from '../client/src/sign-document';
import {
  DocumentsRequestError,
  SigningApiError,
  SigningClient,
  type DigestAlgorithm,
  type KeyType,
  type SignatureAlgorithm,
  type SignatureLevel,
} from '../client/src/signing-client';

const USAGE = [
  'usage: npm run sign -- <file> [--pdf] -o <out> [--citizen <personal number|index>] [--key-type EC-P256] [--scheme ECDSA] [--digest SHA-256] [--level B-B|B-T|B-LT|B-LTA] [--minimum-level B-B] [--message <text>] [--markdown]',
  '       npm run sign -- <file> <file>... [-o <directory>] [the same options but --pdf]',
].join('\n');

/** The options that take a value; the others (--pdf, --markdown) are switches. */
const WITH_VALUE = new Set([
  '-o',
  '--citizen',
  '--key-type',
  '--scheme',
  '--digest',
  '--level',
  '--minimum-level',
  '--message',
]);

function parse(args: string[]): { files: string[]; flags: Map<string, string> } | undefined {
  const files: string[] = [];
  const flags = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (WITH_VALUE.has(arg)) {
      if (args[i + 1] === undefined) return undefined;
      flags.set(arg, args[++i]);
    } else if (arg === '--pdf' || arg === '--markdown') flags.set(arg, '');
    else if (arg.startsWith('-')) return undefined;
    else files.push(arg);
  }
  return { files, flags };
}

const isPdf = (content: Buffer): boolean => content.subarray(0, 5).toString('latin1') === '%PDF-';

/** Where a file's signed output goes: `<name>-signed.pdf` for a PDF, `<name>.p7s` otherwise. */
function outputOf(file: string, pdf: boolean, directory: string | undefined): string {
  const into = directory ?? dirname(file);
  return pdf
    ? join(into, `${basename(file).replace(/\.pdf$/i, '')}-signed.pdf`)
    : join(into, `${basename(file)}.p7s`);
}

type Citizen = (typeof TEST_CITIZENS)[number];
type Flag = (name: string) => string | undefined;

/** --citizen: an index into the test citizens, or one of their personal numbers. */
function testCitizen(who: string): Citizen | undefined {
  return /^\d{1,2}$/.test(who)
    ? TEST_CITIZENS[Number(who)]
    : TEST_CITIZENS.find((c) => c.personalIdentityNumber === who);
}

/** What a single and a several-file signing share: the client, the algorithms and levels, and the login. */
function commonOptions(
  flag: Flag,
  runner: ReturnType<typeof readRunnerInfo>,
  apiUrl: string,
  issuer: string,
  citizen: Citizen,
) {
  const { SIGNING_ACCESS_KEY_ID: accessKeyId, SIGNING_SECRET_KEY: secretAccessKey } = process.env;
  const client = new SigningClient({
    apiUrl,
    apiKey: process.env.SIGNING_API_KEY ?? loadApiClients()[0].apiKey,
    credentials: accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : undefined,
  });
  return {
    client,
    keyType: (flag('--key-type') as KeyType | undefined) ?? 'EC-P256',
    signatureAlgorithm: flag('--scheme') as SignatureAlgorithm | undefined,
    digestAlgorithm: (flag('--digest') as DigestAlgorithm | undefined) ?? 'SHA-256',
    level: (flag('--level') as SignatureLevel | undefined) ?? 'B-LT',
    minimumLevel: flag('--minimum-level') as SignatureLevel | undefined,
    tsaUrl: process.env.TSA_URL ?? (runner ? `${runner.env.PKI_BASE_URL}/tsa` : undefined),
    login: async (nonce: string, request: LoginRequest) =>
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
                  ...(request.documentName ? { documentName: request.documentName } : {}),
                },
              }
            : {}),
        })
      ).idToken,
  };
}

type Common = ReturnType<typeof commonOptions>;
type MimeType = 'text/markdown' | 'text/plain';

/** One file: CAdES detached, or PAdES with --pdf, written to `out`. */
async function signOne(
  common: Common,
  file: string,
  out: string,
  flag: Flag,
  pdf: boolean,
  mimeType: MimeType,
) {
  const signed = await signDocument({
    ...common,
    document: readFileSync(file),
    pdf,
    signMessage: { text: flag('--message') ?? `I sign the document ${basename(file)}.`, mimeType },
    documentName: basename(file),
  });
  writeFileSync(out, signed.output);
  const leaf = new X509Certificate(signed.result.certificate!);
  const form = pdf ? 'PAdES' : 'CAdES, detached';
  console.log(`signed ${file} -> ${out} (${form}, level ${signed.level})`);
  console.log(`  request ${signed.requestId}, certificate ${signed.result.certificateSerial}`);
  console.log(`  signer: ${leaf.subject.replace(/\n/g, ', ')}`);
}

/** Several files under one login, in one request: each PDF as PAdES, any other file as detached CAdES. */
async function signMany(
  common: Common,
  files: string[],
  out: string | undefined,
  flag: Flag,
  mimeType: MimeType,
): Promise<void> {
  const inputs = files.map((file) => {
    const document = readFileSync(file);
    return { file, document, name: basename(file), pdf: isPdf(document) };
  });
  const signed = await signDocuments({
    ...common,
    documents: inputs,
    signMessage: { text: flag('--message') ?? `I sign these ${files.length} documents.`, mimeType },
  });
  inputs.forEach((input, i) => {
    const to = outputOf(input.file, input.pdf, out);
    writeFileSync(to, signed.outputs[i].output);
    const form = input.pdf ? 'PAdES' : 'CAdES, detached';
    console.log(`signed ${input.file} -> ${to} (${form}, level ${signed.outputs[i].level})`);
  });
  const leaf = new X509Certificate(signed.result.certificate!);
  console.log(
    `  one login, request ${signed.requestId}, one certificate ${signed.result.certificateSerial} for ${files.length} documents`,
  );
  console.log(`  signer: ${leaf.subject.replace(/\n/g, ', ')}`);
}

/** A refusal or failure the user is told about (exit 1), not a crash. */
function isRefusal(
  err: unknown,
): err is
  PdfSignatureError | SigningFailedError | SigningApiError | AuthorizationError | DocumentsRequestError {
  return (
    err instanceof PdfSignatureError ||
    err instanceof SigningFailedError ||
    err instanceof SigningApiError ||
    err instanceof AuthorizationError ||
    err instanceof DocumentsRequestError
  );
}

async function main(args: string[]): Promise<number> {
  const parsed = parse(args);
  const files = parsed?.files ?? [];
  const flags = parsed?.flags ?? new Map<string, string>();
  const flag = (name: string): string | undefined => flags.get(name);
  const out = flag('-o');
  if (files.length === 0 || (files.length === 1 && !out) || (files.length > 1 && flags.has('--pdf'))) {
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
  const who = flag('--citizen') ?? '0';
  const citizen = testCitizen(who);
  if (!citizen) {
    console.error(
      `no test citizen ${who}: give an index 0-${TEST_CITIZENS.length - 1} or one of their personal numbers`,
    );
    return 2;
  }
  const common = commonOptions(flag, runner, apiUrl, issuer, citizen);
  const mimeType = flags.has('--markdown') ? ('text/markdown' as const) : ('text/plain' as const);
  try {
    if (files.length === 1) await signOne(common, files[0], out!, flag, flags.has('--pdf'), mimeType);
    else await signMany(common, files, out, flag, mimeType);
    return 0;
  } catch (err) {
    if (isRefusal(err)) {
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
