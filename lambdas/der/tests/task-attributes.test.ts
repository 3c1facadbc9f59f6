/**
 * The signed attributes of DSS-Ext PDF and CMS sign tasks, updated for the certificate: the result signed
 * and assembled by a test e-service is judged by `openssl cms -verify`, its attributes read back by
 * openssl; each refusal of the profile.
 */
import { createHash, createPrivateKey, sign } from 'node:crypto';
import { Attribute, id_contentType, id_data, id_messageDigest, id_signingTime } from '@peculiar/asn1-cms';
import { AsnConvert, AsnObjectIdentifierConverter, OctetString } from '@peculiar/asn1-schema';
import { Time } from '@peculiar/asn1-x509';
import {
  opensslCmsVerify,
  opensslSigningCertificateV2Hash,
  runOpenssl,
} from '../../../scripts/local/verify/openssl';
import {
  BadSignTaskError,
  buildSignedData,
  derChildren,
  signedAttributesDer,
  updateTaskAttributes,
} from '../src';
import { makeTestKey, testKeyDirectory } from '../../test-support/saml-evidence';

const keys = testKeyDirectory();
afterAll(() => keys.remove());
const leaf = makeTestKey(keys.dir, 'leaf', 'ec');
const leafPem = leaf.certPem;
const leafDer = leaf.certificate.raw;
const leafKey = createPrivateKey(leaf.keyPem);
const CONTENT = Buffer.from('the lease of flat 12');
const NOW = new Date('2026-11-29T10:00:00Z');

const attr = (type: string, value: ArrayBuffer): Attribute =>
  new Attribute({ attrType: type, attrValues: [value] });
const contentType = attr(id_contentType, AsnObjectIdentifierConverter.toASN(id_data).toBER());
const messageDigest = attr(
  id_messageDigest,
  AsnConvert.serialize(new OctetString(createHash('sha256').update(CONTENT).digest())),
);
const oldTime = attr(id_signingTime, AsnConvert.serialize(new Time(new Date('2020-01-01T00:00:00Z'))));
const policy = attr(
  '1.2.840.113549.1.9.16.2.15',
  AsnConvert.serialize(new OctetString(Buffer.from('policy'))),
);

/** What the e-service sends: its attributes in the order it chose. */
const input = (...attributes: Attribute[]): Buffer => signedAttributesDer(attributes);
const typesOf = (der: Buffer): string[] =>
  derChildren(der).map((c) => AsnConvert.parse(c, Attribute).attrType);

/** The e-service's CMS around the service's signature of the updated attributes. */
function assembled(updated: Buffer): Buffer {
  return buildSignedData({
    attributes: derChildren(updated).map((c) => AsnConvert.parse(c, Attribute)),
    signature: sign('sha256', updated, leafKey),
    digestAlgorithm: 'SHA-256',
    signatureAlgorithm: 'ECDSA',
    certificatesDer: [leafDer],
  });
}

const update = (der: Buffer, sigType: 'PDF' | 'CMS', adesType: 'None' | 'BES' | 'EPES'): Buffer =>
  updateTaskAttributes({
    der,
    sigType,
    adesType,
    digestAlgorithm: 'SHA-256',
    certificateDer: leafDer,
    signingTime: NOW,
  });

describe('updateTaskAttributes', () => {
  it('CMS BES: signingCertificateV2 of the certificate and the signing time; openssl verifies the CAdES', () => {
    const updated = update(input(messageDigest, contentType, oldTime), 'CMS', 'BES');
    expect(typesOf(updated).sort()).toEqual(
      [id_contentType, id_messageDigest, id_signingTime, '1.2.840.113549.1.9.16.2.47'].sort(),
    );
    const cms = assembled(updated);
    expect(opensslCmsVerify({ cms, content: CONTENT, rootPem: leafPem }).ok).toBe(true);
    expect(opensslSigningCertificateV2Hash(cms)).toBe(createHash('sha256').update(leafDer).digest('hex'));
    const printed = runOpenssl(['cms', '-cmsout', '-print', '-inform', 'DER', '-in', 'sig.p7s'], {
      'sig.p7s': cms,
    }).stdout;
    expect(printed).toContain('Nov 29 10:00:00 2026');
  });

  it('PDF BES: no signingTime (PAdES keeps the time in the PDF); openssl verifies the signature', () => {
    const updated = update(input(contentType, messageDigest, oldTime), 'PDF', 'BES');
    expect(typesOf(updated)).not.toContain(id_signingTime);
    expect(opensslCmsVerify({ cms: assembled(updated), content: CONTENT, rootPem: leafPem }).ok).toBe(true);
  });

  it('EPES keeps the policy byte for byte; None leaves the bytes alone', () => {
    const updated = update(input(contentType, messageDigest, policy), 'CMS', 'EPES');
    expect(updated.includes(Buffer.from(AsnConvert.serialize(policy)))).toBe(true);
    const none = input(messageDigest, contentType);
    expect(update(none, 'CMS', 'None')).toEqual(none);
  });

  it.each([
    ['not a SET', Buffer.from([0x30, 0x00]), 'BES'],
    ['no contentType', input(messageDigest), 'BES'],
    [
      'a messageDigest of another length',
      input(contentType, attr(id_messageDigest, AsnConvert.serialize(new OctetString(Buffer.alloc(20))))),
      'BES',
    ],
    ['an attribute twice', input(contentType, messageDigest, messageDigest), 'BES'],
    ['EPES without a policy', input(contentType, messageDigest), 'EPES'],
  ] as const)('refuses %s', (_, der, adesType) => {
    expect(() => update(der, 'CMS', adesType)).toThrow(BadSignTaskError);
  });
});
