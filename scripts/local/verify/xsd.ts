/**
 * Test support: XML Schema validation by libxml2 (xmllint), offline, against the schemas of the DSS-Ext
 * protocol and what it builds on (OASIS DSS core, the Swedish csig extension 1.1.2, SAML 2.0 assertions,
 * XML Signature and Encryption, XAdES 1.3.2), installed from Maven Central by
 * scripts/local/validators/xsd/install.sh into .local/validators/xsd.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LOCAL_DIR, ROOT } from '../paths';
import { runInstaller, ToolError } from './tool';

const XSD_DIR = join(LOCAL_DIR, 'validators', 'xsd');
const INSTALL_SCRIPT = join(ROOT, 'scripts', 'local', 'validators', 'xsd', 'install.sh');

/** The schemas could not be installed or xmllint could not run (not: a document is invalid). */
export class XsdToolError extends ToolError {
  override readonly name = 'XsdToolError';
}

/** Namespace → schema file: one import each, so the schemas' own remote imports are skipped (--nonet). */
const SCHEMAS: ReadonlyArray<readonly [string, string]> = [
  ['http://www.w3.org/XML/1998/namespace', 'xml.xsd'],
  ['http://www.w3.org/2000/09/xmldsig#', 'xmldsig-core-schema.xsd'],
  ['http://www.w3.org/2001/04/xmlenc#', 'xenc-schema.xsd'],
  ['urn:oasis:names:tc:SAML:2.0:assertion', 'saml-schema-assertion-2.0.xsd'],
  ['urn:oasis:names:tc:SAML:1.0:assertion', 'oasis-sstc-saml-schema-protocol-1.1.xsd'],
  ['urn:oasis:names:tc:dss:1.0:core:schema', 'oasis-dss-core-schema-v1.0-os.xsd'],
  ['http://id.elegnamnden.se/csig/1.1/dss-ext/ns', 'EidCentralSigDssExt-1.1.2.xsd'],
  ['http://id.elegnamnden.se/csig/1.1/sap/ns', 'EidCsigSAP-1.1.xsd'],
  ['http://uri.etsi.org/01903/v1.3.2#', 'XAdES01903v132-201601.xsd'],
];

function schemaFile(): string {
  const file = join(XSD_DIR, 'all.xsd');
  if (!existsSync(join(XSD_DIR, '.stamp')) || !existsSync(file)) {
    runInstaller(INSTALL_SCRIPT, 'XML schemas', XsdToolError);
    const imports = SCHEMAS.map(
      ([ns, location]) => `  <xs:import namespace="${ns}" schemaLocation="${location}"/>`,
    );
    writeFileSync(
      file,
      `<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:local:all">\n${imports.join('\n')}\n</xs:schema>\n`,
    );
  }
  return file;
}

export interface XsdVerdict {
  readonly valid: boolean;
  /** xmllint's complaints about the document (its schema-loading warnings left out). */
  readonly errors: string;
}

/** Validates an XML document against the schemas above (its root element's namespace picks the schema). */
export function validateXsd(xml: string): XsdVerdict {
  const run = spawnSync('xmllint', ['--nonet', '--noout', '--schema', schemaFile(), '-'], {
    input: xml,
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (run.error) throw new XsdToolError(`xmllint could not run: ${run.error.message}`, '', null);
  const errors = (run.stderr ?? '')
    .split('\n')
    .filter((line) => line !== '' && !line.includes('Schemas parser warning') && !line.endsWith(' validates'))
    .join('\n');
  return { valid: run.status === 0, errors };
}
