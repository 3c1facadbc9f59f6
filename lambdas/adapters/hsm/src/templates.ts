import * as pkcs11js from 'pkcs11js';
import { KEY_TYPE_SPECS, type KeyType } from '@pipeline/core/shared';
import { EC_PARAMS } from './encoding';
import type { HsmProfile } from './profiles';
import type { GenerateOptions } from './types';

const RSA_PUBLIC_EXPONENT = Buffer.from([0x01, 0x00, 0x01]); // 65537

export function keyTypeAttribute(keyType: KeyType): number {
  return KEY_TYPE_SPECS[keyType].family === 'RSA' ? pkcs11js.CKK_RSA : pkcs11js.CKK_EC;
}

/**
 * Key pair templates. The public half is a session object that lives only long enough to export it. An
 * extractable (pool) private key is wrappable only under a trusted key where the profile has them.
 */
export function keyPairTemplates(
  keyType: KeyType,
  options: GenerateOptions,
  profile: Pick<HsmProfile, 'trustedWrapping'>,
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
    ...(options.extractable && profile.trustedWrapping
      ? [{ type: pkcs11js.CKA_WRAP_WITH_TRUSTED, value: true }]
      : []),
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
 * What every unwrapped pool key is: a private session object, sensitive, non-extractable, no decrypt,
 * unwrap or derive, so the clear key exists only inside the HSM and only until it is destroyed. The
 * wrapping key's CKA_UNWRAP_TEMPLATE holds exactly this, so the HSM enforces it on every caller; SoftHSM
 * accepts an unwrap only when the caller's template holds each of these attributes with the same value.
 */
export function unwrappedKeyPolicy(): pkcs11js.Template {
  return [
    { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PRIVATE_KEY },
    { type: pkcs11js.CKA_TOKEN, value: false },
    { type: pkcs11js.CKA_PRIVATE, value: true },
    { type: pkcs11js.CKA_SENSITIVE, value: true },
    { type: pkcs11js.CKA_EXTRACTABLE, value: false },
    { type: pkcs11js.CKA_DECRYPT, value: false },
    { type: pkcs11js.CKA_UNWRAP, value: false },
    { type: pkcs11js.CKA_DERIVE, value: false },
  ];
}

/** Template for an unwrapped pool key: the policy above, the key type and signing. */
export function unwrapTemplate(keyType: KeyType): pkcs11js.Template {
  return [
    ...unwrappedKeyPolicy(),
    { type: pkcs11js.CKA_KEY_TYPE, value: keyTypeAttribute(keyType) },
    { type: pkcs11js.CKA_SIGN, value: true },
  ];
}

/** What the wrapping key may wrap (its CKA_WRAP_TEMPLATE): pool private keys, which wrap only under trust. */
export function wrappableKeyPolicy(): pkcs11js.Template {
  return [
    { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PRIVATE_KEY },
    { type: pkcs11js.CKA_WRAP_WITH_TRUSTED, value: true },
  ];
}

/** An attribute whose value may itself be a template (CKA_UNWRAP_TEMPLATE, CKA_WRAP_TEMPLATE). */
export interface NestedAttribute {
  readonly type: number;
  readonly value: boolean | number | string | Buffer | readonly NestedAttribute[];
}

export type NestedTemplate = readonly NestedAttribute[];

/** A template without nested templates, which pkcs11js can pass as it is. */
export function flatTemplate(template: NestedTemplate): pkcs11js.Template | undefined {
  return template.some((a) => Array.isArray(a.value)) ? undefined : (template as pkcs11js.Template);
}

/** CK_ULONG array (CKA_ALLOWED_MECHANISMS): 8 bytes each, as on every 64-bit Linux the service runs on. */
export function ulongArray(values: readonly number[]): Buffer {
  const out = Buffer.alloc(values.length * 8);
  values.forEach((v, i) => out.writeBigUInt64LE(BigInt(v), i * 8));
  return out;
}

/**
 * The AES-256 pool wrapping key: on the token, never extractable, wrap/unwrap only; trusted, with its
 * unwrap and wrap templates and locked, as far as the profile allows. An SO-made key (SoftHSM) is a public
 * object: an SO session can make no other, and SoftHSM lets nobody but a logged-in SO set CKA_TRUSTED.
 */
export function wrappingKeyTemplate(label: string, profile: HsmProfile): NestedTemplate {
  const bySecurityOfficer = profile.wrapKeyCreator === 'security-officer';
  const template: NestedAttribute[] = [
    { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
    { type: pkcs11js.CKA_KEY_TYPE, value: pkcs11js.CKK_AES },
    { type: pkcs11js.CKA_VALUE_LEN, value: 32 },
    { type: pkcs11js.CKA_TOKEN, value: true },
    { type: pkcs11js.CKA_PRIVATE, value: !bySecurityOfficer },
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
  if (profile.trustedWrapping && bySecurityOfficer) {
    template.push({ type: pkcs11js.CKA_TRUSTED, value: true });
  }
  if (profile.wrapKeyTemplates) {
    template.push(
      { type: pkcs11js.CKA_UNWRAP_TEMPLATE, value: unwrappedKeyPolicy() as NestedTemplate },
      { type: pkcs11js.CKA_WRAP_TEMPLATE, value: wrappableKeyPolicy() as NestedTemplate },
    );
  }
  if (profile.lockWrapKey) {
    template.push(
      { type: pkcs11js.CKA_DERIVE, value: false },
      { type: pkcs11js.CKA_MODIFIABLE, value: false },
      { type: pkcs11js.CKA_COPYABLE, value: false },
      { type: pkcs11js.CKA_ALLOWED_MECHANISMS, value: ulongArray([profile.wrapMechanism]) },
    );
  }
  return template;
}
