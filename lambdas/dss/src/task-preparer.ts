/**
 * The signer's part of a DSS-Ext sign task (core signing/sign-task.ts), once the certificate exists: for
 * AdES BES/EPES the e-service's bytes get the certificate reference and the signing time (PDF and CMS:
 * the CMS signed attributes; XML: the XAdES SignedProperties and SignedInfo's reference to them), then the
 * one-time key signs the digest of the bytes. XML signature values of ECDSA keys are r‖s (RFC 4050), not
 * the HSM's DER.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { ECDSASigValue } from '@peculiar/asn1-ecc';
import { AsnConvert } from '@peculiar/asn1-schema';
import { nodeHashName, type DigestAlgorithm, type SignatureAlgorithm } from '@pipeline/core/shared';
import type { PreparedTask, TaskPreparer } from '@pipeline/core/signing';
import { pemToDer, updateTaskAttributes } from '@pipeline/der';
import { SIGNATURE_METHODS, updateXadesTask } from '@pipeline/xml';

export const prepareSignTask: TaskPreparer = (input) => {
  const { task, digestAlgorithm, signatureAlgorithm } = input;
  const certificateDer = pemToDer(input.certificatePem);
  const original = Buffer.from(task.toBeSigned, 'base64');
  const updated =
    task.sigType === 'XML'
      ? updateXadesTask({
          signedInfo: original,
          adesType: task.adesType,
          signatureMethod: xmlSignatureMethod(signatureAlgorithm, digestAlgorithm),
          ...(task.signatureId === undefined ? {} : { signatureId: task.signatureId }),
          ...(task.adesObject === undefined ? {} : { adesObject: Buffer.from(task.adesObject, 'base64') }),
          certificateDer,
          signingTime: input.signingTime,
        })
      : {
          signedInfo: updateTaskAttributes({
            der: original,
            sigType: task.sigType,
            adesType: task.adesType,
            digestAlgorithm,
            certificateDer,
            signingTime: input.signingTime,
          }),
        };
  const toBeSignedBytes = updated.signedInfo;
  return {
    toBeSigned: createHash(nodeHashName(digestAlgorithm)).update(toBeSignedBytes).digest(),
    toBeSignedBytes,
    ...(updated.adesObject === undefined ? {} : { adesObject: updated.adesObject }),
    encodeSignature: (signature) =>
      task.sigType === 'XML' && signatureAlgorithm === 'ECDSA'
        ? rawEcdsa(signature, curveSize(input.certificatePem))
        : signature,
  } satisfies PreparedTask;
};

const FAMILY: Readonly<Record<SignatureAlgorithm, string>> = {
  'RSASSA-PKCS1-v1_5': 'rsa-pkcs1',
  'RSASSA-PSS': 'rsa-pss',
  ECDSA: 'ecdsa',
};

/** The SignatureMethod URI of a scheme and digest (the one the SignRequest asked for). */
function xmlSignatureMethod(scheme: SignatureAlgorithm, digest: DigestAlgorithm): string {
  const uri = Object.keys(SIGNATURE_METHODS).find(
    (u) => SIGNATURE_METHODS[u]!.family === FAMILY[scheme] && SIGNATURE_METHODS[u]!.digest === digest,
  );
  return uri ?? '';
}

/** The byte length of the certified key's curve: r and s each have it in r‖s. */
function curveSize(certificatePem: string): number {
  const curve = new X509Certificate(certificatePem).publicKey.asymmetricKeyDetails?.namedCurve;
  return curve === 'secp384r1' ? 48 : 32;
}

/** An ECDSA signature (DER ECDSA-Sig-Value) as r‖s, each of the curve's length. */
function rawEcdsa(signature: Buffer, size: number): Buffer {
  const { r, s } = AsnConvert.parse(signature, ECDSASigValue);
  return Buffer.concat([fixed(Buffer.from(r), size), fixed(Buffer.from(s), size)]);
}

function fixed(integer: Buffer, size: number): Buffer {
  const trimmed = integer.subarray(Math.max(0, integer.length - size));
  return Buffer.concat([Buffer.alloc(size - trimmed.length), trimmed]);
}
