/**
 * Test support: reads a certificate's Authentication Context extension (RFC 7773) with tools that share
 * no code with the CA: `openssl asn1parse` finds the extension and takes its DER apart, Python's
 * xml.etree (a conforming XML parser: entities, character references, namespaces) reads the saci XML.
 */
import { spawnSync } from 'node:child_process';
import { runOpenssl } from './openssl';

const AUTH_CONTEXT_OID = '1.2.752.201.5.1';

/** One line of `openssl asn1parse`: offset, depth, header and content length, tag, value. */
interface Asn1Line {
  readonly offset: number;
  readonly depth: number;
  readonly headerLength: number;
  readonly length: number;
  readonly tag: string;
  readonly value: string;
}

function asn1parse(der: Buffer, extra: string[] = [], read: string[] = []) {
  const run = runOpenssl(['asn1parse', '-inform', 'DER', '-in', 'in.der', ...extra], { 'in.der': der }, read);
  if (!run.ok) throw new Error(`openssl asn1parse failed: ${run.stderr}`);
  const lines = run.stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((line): Asn1Line => {
      const m = /^\s*(\d+):d=\s*(\d+)\s+hl=\s*(\d+)\s+l=\s*(\d+)\s+(?:prim|cons):\s*(.*)$/.exec(line);
      if (!m) throw new Error(`unexpected asn1parse line: ${line}`);
      const colon = m[5].indexOf(':');
      return {
        offset: Number(m[1]),
        depth: Number(m[2]),
        headerLength: Number(m[3]),
        length: Number(m[4]),
        tag: (colon < 0 ? m[5] : m[5].slice(0, colon)).trim(),
        value: colon < 0 ? '' : m[5].slice(colon + 1),
      };
    });
  return { lines, outputs: run.outputs };
}

/** The extension as openssl takes it apart: whether critical, and its contexts (the strings as UTF-8). */
export interface RawAuthContextExtension {
  readonly critical: boolean;
  /** Size of the extension value's DER (the AuthenticationContexts SEQUENCE). */
  readonly valueLength: number;
  readonly contexts: ReadonlyArray<{ readonly contextType: string; readonly contextInfo?: string }>;
}

/**
 * Finds extension 1.2.752.201.5.1 in a certificate with `openssl asn1parse` and decodes its value, the
 * SEQUENCE OF SEQUENCE { contextType UTF8String, contextInfo UTF8String OPTIONAL }. The strings are cut
 * out of the DER at the offsets openssl reports (its printout replaces non-ASCII bytes with dots).
 */
export function readAuthContextExtension(certificatePem: string): RawAuthContextExtension | undefined {
  const der = runOpenssl(
    ['x509', '-in', 'c.pem', '-outform', 'DER', '-out', 'c.der'],
    { 'c.pem': certificatePem },
    ['c.der'],
  ).outputs['c.der'];
  const { lines } = asn1parse(der);
  const at = lines.findIndex((l) => l.tag === 'OBJECT' && l.value.trim() === AUTH_CONTEXT_OID);
  if (at < 0) return undefined;
  // Extension ::= SEQUENCE { extnID, critical BOOLEAN DEFAULT FALSE, extnValue OCTET STRING }
  let next = at + 1;
  let critical = false;
  if (lines[next].tag === 'BOOLEAN') {
    critical = /255|TRUE/i.test(lines[next].value);
    next++;
  }
  const octets = lines[next];
  if (!octets.tag.startsWith('OCTET STRING')) throw new Error('the extension has no OCTET STRING value');
  const value = der.subarray(
    octets.offset + octets.headerLength,
    octets.offset + octets.headerLength + octets.length,
  );
  const inner = asn1parse(value).lines;
  if (inner[0]?.tag !== 'SEQUENCE' || inner[0].depth !== 0) throw new Error('the value is not a SEQUENCE');
  if (inner[0].headerLength + inner[0].length !== value.length)
    throw new Error('trailing bytes in the value');
  const text = (l: Asn1Line): string => {
    if (l.tag !== 'UTF8STRING') throw new Error(`expected UTF8String, got ${l.tag}`);
    return value.subarray(l.offset + l.headerLength, l.offset + l.headerLength + l.length).toString('utf8');
  };
  const contexts: Array<{ contextType: string; contextInfo?: string }> = [];
  for (let i = 1; i < inner.length; i++) {
    const l = inner[i];
    if (l.depth !== 1) continue;
    if (l.tag !== 'SEQUENCE') throw new Error('an AuthenticationContext is not a SEQUENCE');
    const fields: Asn1Line[] = [];
    for (let k = i + 1; k < inner.length && inner[k].depth >= 2; k++) {
      if (inner[k].depth === 2) fields.push(inner[k]);
    }
    if (fields.length < 1 || fields.length > 2) throw new Error('an AuthenticationContext has 1 or 2 fields');
    contexts.push({
      contextType: text(fields[0]),
      ...(fields[1] ? { contextInfo: text(fields[1]) } : {}),
    });
  }
  return { critical, valueLength: value.length, contexts };
}

/** A `<saci:SAMLAuthContext>` as an XML parser reads it. */
export interface ParsedSamlAuthContext {
  /** `{namespace}localName` of the document element. */
  readonly root: string;
  readonly authContextInfo: Record<string, string>;
  readonly mappings: ReadonlyArray<{
    readonly type: string;
    readonly ref: string;
    readonly name: string;
    readonly friendlyName?: string;
    readonly values: readonly string[];
  }>;
}

const PARSER = `
import json, sys
import xml.etree.ElementTree as ET
SACI = '{http://id.elegnamnden.se/auth-cont/1.0/saci}'
SAML = '{urn:oasis:names:tc:SAML:2.0:assertion}'
root = ET.fromstring(sys.stdin.buffer.read())
info = root.find(SACI + 'AuthContextInfo')
mappings = []
for m in root.findall(SACI + 'IdAttributes/' + SACI + 'AttributeMapping'):
    attrs = m.findall(SAML + 'Attribute')
    if len(attrs) != 1: raise SystemExit('an AttributeMapping holds one saml:Attribute')
    a = attrs[0]
    entry = {'type': m.get('Type'), 'ref': m.get('Ref'), 'name': a.get('Name'),
             'values': [v.text or '' for v in a.findall(SAML + 'AttributeValue')]}
    if a.get('FriendlyName') is not None: entry['friendlyName'] = a.get('FriendlyName')
    mappings.append(entry)
print(json.dumps({'root': root.tag, 'authContextInfo': dict(info.attrib) if info is not None else {},
                  'mappings': mappings}))
`;

/** Parses saci XML with python3's xml.etree. Throws when it is not well-formed XML. */
export function parseSamlAuthContext(xml: string): ParsedSamlAuthContext {
  const run = spawnSync('python3', ['-c', PARSER], { input: Buffer.from(xml, 'utf8'), encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`the XML parser refused the document: ${run.stderr}`);
  return JSON.parse(run.stdout) as ParsedSamlAuthContext;
}
