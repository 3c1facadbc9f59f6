import * as pkcs11js from 'pkcs11js';
import { KEY_TYPE_SPECS, type KeyType } from '../../../core/src';
import { EC_PARAMS } from './encoding';
import type { GenerateOptions } from './types';

const RSA_PUBLIC_EXPONENT = Buffer.from([0x01, 0x00, 0x01]); // 65537

export function keyTypeAttribute(keyType: KeyType): number {
  return KEY_TYPE_SPECS[keyType].family === 'RSA' ? pkcs11js.CKK_RSA : pkcs11js.CKK_EC;
}

/** Key pair templates. The public half is a session object that lives only long enough to export it. */
export function keyPairTemplates(
  keyType: KeyType,
  options: GenerateOptions,
): { mechanism: number; publicTemplate: pkcs11js.Template; privateTemplate: pkcs11js.Template } {
  const spec = KEY_TYPE_SPECS[keyType];
  const onToken = options.tokenLabel !== undefined;
  const labelled = onToken ? [{ type: pkcs11js.CKA_LABEL, value: options.tokenLabel }] : [];
  const publicTemplate: pkcs11js.Template = [
    { type: pkcs11js.CKA_TOKEN, value: onToken },
    { type: pkcs11js.CKA_VERIFY, value: true },
    { type: pkcs11js.CKA_ENCRYPT, value: false },
    { type: pkcs11js.CKA_WRAP, value: false },
    ...labelled,
  ];
  const privateTemplate: pkcs11js.Template = [
    { type: pkcs11js.CKA_TOKEN, value: onToken },
    { type: pkcs11js.CKA_PRIVATE, value: true },
    { type: pkcs11js.CKA_SENSITIVE, value: true },
    { type: pkcs11js.CKA_EXTRACTABLE, value: options.extractable },
    { type: pkcs11js.CKA_SIGN, value: true },
    { type: pkcs11js.CKA_DECRYPT, value: false },
    { type: pkcs11js.CKA_UNWRAP, value: false },
    { type: pkcs11js.CKA_DERIVE, value: false },
    ...labelled,
  ];
  if (spec.family === 'RSA') {
    publicTemplate.push(
      { type: pkcs11js.CKA_MODULUS_BITS, value: spec.bits },
      { type: pkcs11js.CKA_PUBLIC_EXPONENT, value: RSA_PUBLIC_EXPONENT },
    );
    return { mechanism: pkcs11js.CKM_RSA_PKCS_KEY_PAIR_GEN, publicTemplate, privateTemplate };
  }
  publicTemplate.push({ type: pkcs11js.CKA_EC_PARAMS, value: EC_PARAMS[spec.curve!] });
  return { mechanism: pkcs11js.CKM_EC_KEY_PAIR_GEN, publicTemplate, privateTemplate };
}

/**
 * Template for an unwrapped pool key: a session object, sensitive, non-extractable and sign-only, so the
 * clear key exists only inside the HSM and only until it is destroyed.
 */
export function unwrapTemplate(keyType: KeyType): pkcs11js.Template {
  return [
    { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PRIVATE_KEY },
    { type: pkcs11js.CKA_KEY_TYPE, value: keyTypeAttribute(keyType) },
    { type: pkcs11js.CKA_TOKEN, value: false },
    { type: pkcs11js.CKA_PRIVATE, value: true },
    { type: pkcs11js.CKA_SENSITIVE, value: true },
    { type: pkcs11js.CKA_EXTRACTABLE, value: false },
    { type: pkcs11js.CKA_SIGN, value: true },
    { type: pkcs11js.CKA_DECRYPT, value: false },
    { type: pkcs11js.CKA_UNWRAP, value: false },
    { type: pkcs11js.CKA_DERIVE, value: false },
  ];
}

/** The AES-256 pool wrapping key: on the token, never extractable, wrap/unwrap only. */
export function wrappingKeyTemplate(label: string): pkcs11js.Template {
  return [
    { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
    { type: pkcs11js.CKA_KEY_TYPE, value: pkcs11js.CKK_AES },
    { type: pkcs11js.CKA_VALUE_LEN, value: 32 },
    { type: pkcs11js.CKA_TOKEN, value: true },
    { type: pkcs11js.CKA_PRIVATE, value: true },
    { type: pkcs11js.CKA_SENSITIVE, value: true },
    { type: pkcs11js.CKA_EXTRACTABLE, value: false },
    { type: pkcs11js.CKA_WRAP, value: true },
    { type: pkcs11js.CKA_UNWRAP, value: true },
    { type: pkcs11js.CKA_ENCRYPT, value: false },
    { type: pkcs11js.CKA_DECRYPT, value: false },
    { type: pkcs11js.CKA_SIGN, value: false },
    { type: pkcs11js.CKA_VERIFY, value: false },
    { type: pkcs11js.CKA_LABEL, value: label },
  ];
}
