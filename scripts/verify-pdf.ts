/**
 * npm run verify-pdf -- <file.pdf | file.p7s --content <file>> [--root <root.pem>] [--at <ISO time>]
 *                        [--b-b] [--json]
 *
 * Validates every signature of a PDF (or a detached CAdES signature over its content) with the EU DSS
 * validator (ETSI EN 319 102-1), the same one the tests use (scripts/local/verify/pdf-validator.ts;
 * installed into .local/validators/pdf on first use). Offline, as an archive validator: the only trust
 * anchor is the root CA certificate, by default the local one in .local/ca/root.pem, and the only
 * revocation data what the signature carries; DSS's default policy unmodified, unless --b-b lowers its
 * revocation checks to warnings (a B-B signature carries no revocation data). --at validates as of
 * another time (e.g. after the one-time certificate expired).
 * Prints one line per signature (or the whole report with --json). Exit codes: 0 every signature
 * TOTAL_PASSED, 1 a signature did not pass or none was found, 2 could not run.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LOCAL_DIR } from './local/paths';
import { PdfValidatorError, validatePdfSignatures } from './local/verify/pdf-validator';

const USAGE =
  'usage: npm run verify-pdf -- <file.pdf | file.p7s --content <file>> [--root <root.pem>] [--at <ISO time>] [--b-b] [--json]';

const ATTRIBUTE_NAMES: Record<string, string> = {
  '2.5.4.4': 'SN',
  '2.5.4.5': 'serialNumber',
  '2.5.4.42': 'GN',
};

/** DSS prints RFC 2253 names, with attributes it has no short name for as `OID=#<DER hex>`: decode those. */
function readableName(rfc2253: string): string {
  return rfc2253.replace(/(\d+(?:\.\d+)+)=#([0-9a-f]+)/gi, (whole, oid: string, hex: string) => {
    const der = Buffer.from(hex, 'hex');
    if (der.length < 2 || der[1] >= 0x80 || der[1] !== der.length - 2) return whole;
    return `${ATTRIBUTE_NAMES[oid] ?? oid}=${der.subarray(2).toString('utf8')}`;
  });
}

function main(args: string[]): number {
  const file = args[0];
  const rootAt = args.indexOf('--root');
  const rootFile = rootAt >= 0 ? args[rootAt + 1] : join(LOCAL_DIR, 'ca', 'root.pem');
  if (!file || file.startsWith('-') || !rootFile) {
    console.error(USAGE);
    return 2;
  }
  if (!existsSync(file) || !existsSync(rootFile)) {
    console.error(`not found: ${existsSync(file) ? rootFile : file}`);
    return 2;
  }
  const flag = (name: string): string | undefined =>
    args.indexOf(name) >= 0 ? args[args.indexOf(name) + 1] : undefined;
  const content = flag('--content');
  const at = flag('--at');
  const report = validatePdfSignatures({
    pdf: readFileSync(file),
    trustedRootsPem: [readFileSync(rootFile, 'utf8')],
    policy: args.includes('--b-b') ? 'b-b-offline' : 'default',
    ...(content ? { detachedContent: readFileSync(content) } : {}),
    ...(at ? { validationTime: new Date(at) } : {}),
  });
  if (args.includes('--json')) {
    console.log(JSON.stringify(report, null, 2));
  } else {
    console.log(`${file}: ${report.signaturesCount} signature(s), policy ${report.policy}`);
    for (const s of report.signatures) {
      const verdict = s.subIndication ? `${s.indication} (${s.subIndication})` : s.indication;
      console.log(
        `  ${s.pdf?.fieldNames.join(',') ?? s.id}: ${verdict}, ${s.signatureFormat ?? 'no format'}`,
      );
      console.log(`    signer: ${readableName(s.signerCertificate?.subject ?? 'unknown')}`);
      console.log(`    chain trusted: ${s.chainTrusted}, signing time: ${s.signingTime ?? 'none'}`);
      for (const e of s.errors) console.log(`    error: ${e.message}`);
    }
  }
  const passed =
    report.signaturesCount > 0 && report.signatures.every((s) => s.indication === 'TOTAL_PASSED');
  return passed ? 0 : 1;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (err) {
  const e = err as Error;
  console.error(
    `verify-pdf failed: ${e instanceof PdfValidatorError ? e.message : `${e.name}: ${e.message}`}`,
  );
  process.exitCode = 2;
}
