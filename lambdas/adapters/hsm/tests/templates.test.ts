/**
 * The templates the HSM profiles ask for, without an HSM: what the wrapping key forces on unwrapped keys
 * and what the adapter asks for must agree, or SoftHSM refuses every unwrap.
 */
import * as pkcs11js from 'pkcs11js';
import { KEY_TYPES } from '@pipeline/core/shared';
import { HSM_PROFILES } from '../src';
import { keyPairTemplates, unwrapTemplate, unwrappedKeyPolicy, wrappingKeyTemplate } from '../src/templates';

const value = (template: ReadonlyArray<{ type: number; value?: unknown }>, type: number): unknown =>
  template.find((a) => a.type === type)?.value;

test.each(KEY_TYPES)(
  'the %s unwrap template holds the whole unwrap policy, each attribute once',
  (keyType) => {
    const template = unwrapTemplate(keyType);
    expect(new Set(template.map((a) => a.type)).size).toBe(template.length);
    for (const attribute of unwrappedKeyPolicy()) expect(template).toContainEqual(attribute);
    expect(value(template, pkcs11js.CKA_EXTRACTABLE)).toBe(false);
    expect(value(template, pkcs11js.CKA_SENSITIVE)).toBe(true);
    expect(value(template, pkcs11js.CKA_TOKEN)).toBe(false);
  },
);

test.each(Object.values(HSM_PROFILES))(
  'the $name wrapping key carries the unwrap policy as its template',
  (profile) => {
    const template = wrappingKeyTemplate('pool-wrap-v9', profile);
    expect(profile.trustedWrapping && profile.wrapKeyTemplates).toBe(true);
    expect(value(template, pkcs11js.CKA_UNWRAP_TEMPLATE)).toEqual(unwrappedKeyPolicy());
    expect(value(template, pkcs11js.CKA_EXTRACTABLE)).toBe(false);
    // Only SoftHSM's security officer sets CKA_TRUSTED at creation; on CloudHSM an admin sets it later.
    expect(value(template, pkcs11js.CKA_TRUSTED)).toBe(
      profile.wrapKeyCreator === 'security-officer' ? true : undefined,
    );
    expect(value(template, pkcs11js.CKA_MODIFIABLE)).toBe(profile.lockWrapKey ? false : undefined);
  },
);

test('only extractable (pool) private keys are generated wrap-with-trusted', () => {
  const profile = HSM_PROFILES.softhsm;
  const wwt = (extractable: boolean) =>
    value(
      keyPairTemplates('EC-P256', { extractable }, profile).privateTemplate,
      pkcs11js.CKA_WRAP_WITH_TRUSTED,
    );
  expect(wwt(true)).toBe(true);
  expect(wwt(false)).toBeUndefined();
  expect(
    value(
      keyPairTemplates('EC-P256', { extractable: true }, { trustedWrapping: false }).privateTemplate,
      pkcs11js.CKA_WRAP_WITH_TRUSTED,
    ),
  ).toBeUndefined();
});
