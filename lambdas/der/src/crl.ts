import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import {
  AuthorityKeyIdentifier,
  CRLNumber,
  CRLReason,
  CRLReasons,
  CertificateList,
  Extension,
  KeyIdentifier,
  RevokedCertificate,
  TBSCertList,
  Time,
  Version,
  id_ce_authorityKeyIdentifier,
  id_ce_cRLNumber,
  id_ce_cRLReasons,
} from '@peculiar/asn1-x509';
import { X509Certificate, constants, verify } from 'node:crypto';
import { algorithmIdentifier, schemeFor, schemeForOid, signDer } from './algorithms';
import type { CertificateSigner } from './certificate';
import { toArrayBuffer } from './der';
import { nodeHashName, PipelineError } from '@pipeline/core/shared';
import type { RevocationReason, RevokedEntry } from '@pipeline/core/pki';

export interface CrlContent {
  /** Monotonically increasing per issuer (RFC 5280 5.2.3). */
  readonly number: number;
  readonly thisUpdate: Date;
  readonly nextUpdate: Date;
  readonly revoked: readonly RevokedEntry[];
}

/** DER INTEGER content of a hex serial: a 0x00 sign octet when the top bit is set. */
export function serialInteger(serialHex: string): ArrayBuffer {
  const bytes = Buffer.from(serialHex.length % 2 ? `0${serialHex}` : serialHex, 'hex');
  return toArrayBuffer(bytes[0] & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
}

function extension(extnID: string, critical: boolean, value: unknown): Extension {
  return new Extension({ extnID, critical, extnValue: new OctetString(AsnConvert.serialize(value)) });
}

/**
 * A full v2 CRL (RFC 5280 5) signed by `signer` (the CA key in the HSM): issuer, thisUpdate/nextUpdate,
 * one entry per revoked serial with its revocation date and reason code (absent for `unspecified`, as
 * 5.3.1 asks), and the authority key identifier and CRL number extensions.
 */
export async function signCrl(content: CrlContent, signer: CertificateSigner): Promise<Buffer> {
  const scheme = schemeFor(signer.keyType);
  const entries = [...content.revoked]
    .sort((a, b) => a.serialHex.localeCompare(b.serialHex))
    .map(
      (entry) =>
        new RevokedCertificate({
          userCertificate: serialInteger(entry.serialHex),
          revocationDate: new Time(entry.revokedAt),
          ...(entry.reason === 'unspecified'
            ? {}
            : {
                crlEntryExtensions: [
                  extension(id_ce_cRLReasons, false, new CRLReason(CRLReasons[entry.reason])),
                ],
              }),
        }),
    );
  const tbs = new TBSCertList({
    version: Version.v2,
    signature: algorithmIdentifier(scheme),
    issuer: signer.name,
    thisUpdate: new Time(content.thisUpdate),
    nextUpdate: new Time(content.nextUpdate),
    ...(entries.length > 0 ? { revokedCertificates: entries } : {}),
    crlExtensions: [
      extension(
        id_ce_authorityKeyIdentifier,
        false,
        new AuthorityKeyIdentifier({ keyIdentifier: new KeyIdentifier(signer.keyIdentifier) }),
      ),
      extension(id_ce_cRLNumber, false, new CRLNumber(content.number)),
    ],
  });
  const tbsDer = Buffer.from(AsnConvert.serialize(tbs));
  const signature = await signDer(tbsDer, scheme, signer.sign);
  const crl = new CertificateList({
    tbsCertList: tbs,
    signatureAlgorithm: algorithmIdentifier(scheme),
    signature: toArrayBuffer(signature),
  });
  return Buffer.from(AsnConvert.serialize(crl));
}

/** A published CRL whose signature verified under its issuer's key. */
export type VerifiedCrl = CrlContent;

/** The CRL does not parse, or its signature does not verify under the expected issuer's key. */
export class CrlInvalidError extends PipelineError {
  public override readonly name = 'CrlInvalidError';
  public constructor(message: string) {
    super(message, 'CRL_INVALID');
  }
}

/**
 * Parses a CRL and verifies its signature with the issuer certificate's public key: what the CA signed,
 * read back (the anchor revocations are checked against, whatever the certificate records now say).
 * Throws CrlInvalidError.
 */
export function verifyCrl(der: Buffer, issuerCertificateDer: Buffer): VerifiedCrl {
  let crl: CertificateList;
  try {
    crl = AsnConvert.parse(der, CertificateList);
  } catch {
    throw new CrlInvalidError('the CRL is not a DER CertificateList');
  }
  const scheme = schemeForOid(crl.signatureAlgorithm.algorithm);
  if (!scheme || !crl.tbsCertListRaw)
    throw new CrlInvalidError('the CRL signature algorithm is not supported');
  const key = new X509Certificate(issuerCertificateDer).publicKey;
  const signed = Buffer.from(crl.tbsCertListRaw);
  const signature = Buffer.from(crl.signature);
  let ok = false;
  try {
    ok =
      scheme.signatureAlgorithm === 'ECDSA'
        ? verify(nodeHashName(scheme.digestAlgorithm), signed, { key, dsaEncoding: 'der' }, signature)
        : verify(
            nodeHashName(scheme.digestAlgorithm),
            signed,
            { key, padding: constants.RSA_PKCS1_PADDING },
            signature,
          );
  } catch {
    ok = false;
  }
  if (!ok) throw new CrlInvalidError('the CRL signature does not verify with the issuer key');
  const tbs = crl.tbsCertList;
  const numberExtension = tbs.crlExtensions?.find((e) => e.extnID === id_ce_cRLNumber);
  const number = numberExtension
    ? Number(bigIntOf(AsnConvert.parse(numberExtension.extnValue.buffer, CRLNumber).value))
    : 0;
  return {
    number,
    thisUpdate: tbs.thisUpdate.getTime(),
    nextUpdate: tbs.nextUpdate?.getTime() ?? tbs.thisUpdate.getTime(),
    revoked: (tbs.revokedCertificates ?? []).map((entry) => {
      const reasonExtension = entry.crlEntryExtensions?.find((e) => e.extnID === id_ce_cRLReasons);
      const code = reasonExtension
        ? AsnConvert.parse(reasonExtension.extnValue.buffer, CRLReason).reason
        : CRLReasons.unspecified;
      return {
        serialHex: Buffer.from(entry.userCertificate)
          .toString('hex')
          .replace(/^00(?=[89a-f])/, ''),
        revokedAt: entry.revocationDate.getTime(),
        reason: (CRLReasons[code] ?? 'unspecified') as RevocationReason,
      };
    }),
  };
}

function bigIntOf(value: number | ArrayBuffer): bigint {
  return typeof value === 'number' ? BigInt(value) : BigInt(`0x${Buffer.from(value).toString('hex') || '0'}`);
}
