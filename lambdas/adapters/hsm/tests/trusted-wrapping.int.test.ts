/**
 * Keys that cannot leave the HSM, against the real SoftHSM token made by the bootstrap. The attacker holds
 * the pool user's PIN and calls PKCS#11 directly (raw pkcs11js, its own sessions), on the pool keys the
 * adapter makes: it may unwrap a stored blob as it likes and wrap under a key of its own. The HSM refuses
 * both, because pool keys carry CKA_WRAP_WITH_TRUSTED and the trusted wrapping key an unwrap template.
 */
import { createHash, createPublicKey, verify } from 'node:crypto';
import * as pkcs11js from 'pkcs11js';
import { loadConfig } from '@pipeline/config';
import { resolvePin } from '@pipeline/adapters/parameters';
import { ckrName, connectHsm, Pkcs11Hsm, profileFor, type PrivateKeyRef } from '../src';
import { unwrapTemplate } from '../src/templates';

const config = loadConfig(process.env);
const WRAP = config.hsm.wrapKeyLabel;
const profile = profileFor(config.hsm.profile);
const KWP = { mechanism: profile.wrapMechanism };

let hsm: Pkcs11Hsm;
let raw: pkcs11js.PKCS11;
let session: Buffer;
let wrappingKey: Buffer;
let ownKey: Buffer;

beforeAll(async () => {
  hsm = await connectHsm(config.hsm, config.aws);
  // A second pkcs11js instance on the same module: the attacker's own handle on the library.
  raw = new pkcs11js.PKCS11();
  raw.load(config.hsm.modulePath);
  tolerate(() => raw.C_Initialize(), pkcs11js.CKR_CRYPTOKI_ALREADY_INITIALIZED);
  const slot = raw
    .C_GetSlotList(true)
    .find((s) => raw.C_GetTokenInfo(s).label.trim() === config.hsm.tokenLabel)!;
  session = raw.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
  const pin = await resolvePin(config.hsm.pinSource, config.aws);
  tolerate(() => raw.C_Login(session, pkcs11js.CKU_USER, pin), pkcs11js.CKR_USER_ALREADY_LOGGED_IN);
  raw.C_FindObjectsInit(session, [
    { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
    { type: pkcs11js.CKA_LABEL, value: WRAP },
  ]);
  wrappingKey = raw.C_FindObjects(session)!;
  raw.C_FindObjectsFinal(session);
  // The attacker's own wrapping key: extractable, not sensitive, so whatever it wraps could be read.
  ownKey = raw.C_GenerateKey(session, { mechanism: pkcs11js.CKM_AES_KEY_GEN }, [
    { type: pkcs11js.CKA_TOKEN, value: false },
    { type: pkcs11js.CKA_VALUE_LEN, value: 32 },
    { type: pkcs11js.CKA_WRAP, value: true },
    { type: pkcs11js.CKA_UNWRAP, value: true },
    { type: pkcs11js.CKA_SENSITIVE, value: false },
    { type: pkcs11js.CKA_EXTRACTABLE, value: true },
  ]);
});

afterAll(async () => {
  if (ownKey) raw.C_DestroyObject(session, ownKey);
  // No logout and no C_Finalize here: the login and the library belong to the whole process.
  if (session) raw.C_CloseSession(session);
  await hsm?.close();
});

function tolerate(call: () => void, code: number): void {
  try {
    call();
  } catch (err) {
    if ((err as { code?: number }).code !== code) throw err;
  }
}

/** The CKR name a raw call fails with, or 'OK' when the HSM lets it through. */
function outcome(call: () => unknown): string {
  try {
    call();
    return 'OK';
  } catch (err) {
    // Native errors come from another realm than Jest's, so read the fields rather than instanceof.
    const { code, message } = err as { code?: unknown; message?: unknown };
    if (typeof code === 'number') return ckrName(code);
    const name = /^(CKR_[A-Z_]+)/.exec(String(message))?.[1];
    if (!name) throw err;
    return name;
  }
}

function bool(handle: Buffer, type: number): boolean {
  const [attr] = raw.C_GetAttributeValue(session, handle, [{ type }]);
  return (attr.value as Buffer)[0] === 1;
}

/** A wrapped EC-P256 pool key as it sits in the pool table, and its public key. */
async function storedPoolKey(): Promise<{ wrapped: Buffer; spki: Buffer }> {
  const pair = await hsm.generateKeyPair('EC-P256', { extractable: true });
  try {
    return { wrapped: await hsm.wrapPrivateKey(pair.privateKey, WRAP), spki: pair.publicKeySpki };
  } finally {
    await hsm.destroy(pair.privateKey);
  }
}

/** The adapter's unwrap template with some attributes changed (undefined: left out). */
function attackerTemplate(changes: Record<number, unknown>): pkcs11js.Template {
  const template = unwrapTemplate('EC-P256').filter((a) => !(a.type in changes));
  for (const [type, value] of Object.entries(changes)) {
    if (value !== undefined) template.push({ type: Number(type), value: value as boolean | number });
  }
  return template;
}

test('the profile uses trusted wrapping and unwrap templates', () => {
  expect(profile).toMatchObject({ name: 'softhsm', trustedWrapping: true, wrapKeyTemplates: true });
});

test('the wrapping key is trusted, made by the security officer, and cannot be changed, copied or used to decrypt', () => {
  expect(bool(wrappingKey, pkcs11js.CKA_TRUSTED)).toBe(true);
  // An SO session can make only public objects in SoftHSM.
  expect(bool(wrappingKey, pkcs11js.CKA_PRIVATE)).toBe(false);
  expect(bool(wrappingKey, pkcs11js.CKA_SENSITIVE)).toBe(true);
  expect(bool(wrappingKey, pkcs11js.CKA_EXTRACTABLE)).toBe(false);
  expect(bool(wrappingKey, pkcs11js.CKA_MODIFIABLE)).toBe(false);
  expect(bool(wrappingKey, pkcs11js.CKA_COPYABLE)).toBe(false);
  expect(
    outcome(() =>
      raw.C_SetAttributeValue(session, wrappingKey, [{ type: pkcs11js.CKA_DECRYPT, value: true }]),
    ),
  ).not.toBe('OK');
  expect(
    outcome(() => raw.C_CopyObject(session, wrappingKey, [{ type: pkcs11js.CKA_TOKEN, value: false }])),
  ).not.toBe('OK');
  expect(
    outcome(() => raw.C_DecryptInit(session, { mechanism: pkcs11js.CKM_AES_ECB }, wrappingKey)),
  ).not.toBe('OK');
  expect(
    outcome(() =>
      raw.C_UnwrapKey(
        session,
        { mechanism: pkcs11js.CKM_AES_CBC, parameter: Buffer.alloc(16) },
        wrappingKey,
        Buffer.alloc(32),
        unwrapTemplate('EC-P256'),
      ),
    ),
  ).not.toBe('OK');
});

test('the pool user cannot make a trusted key of its own', () => {
  const result = outcome(() =>
    raw.C_GenerateKey(session, { mechanism: pkcs11js.CKM_AES_KEY_GEN }, [
      { type: pkcs11js.CKA_TOKEN, value: false },
      { type: pkcs11js.CKA_VALUE_LEN, value: 32 },
      { type: pkcs11js.CKA_WRAP, value: true },
      { type: pkcs11js.CKA_TRUSTED, value: true },
    ]),
  );
  expect(result).toBe('CKR_ATTRIBUTE_READ_ONLY');
});

describe('(1) a stored pool key unwraps only as a sensitive, non-extractable session key', () => {
  test.each([
    ['extractable', { [pkcs11js.CKA_EXTRACTABLE]: true }],
    ['not sensitive', { [pkcs11js.CKA_SENSITIVE]: false }],
    ['with CKA_EXTRACTABLE left to the default', { [pkcs11js.CKA_EXTRACTABLE]: undefined }],
    ['with CKA_SENSITIVE left to the default', { [pkcs11js.CKA_SENSITIVE]: undefined }],
    ['as a token object', { [pkcs11js.CKA_TOKEN]: true }],
    ['able to derive', { [pkcs11js.CKA_DERIVE]: true }],
    [
      'as a generic secret',
      {
        [pkcs11js.CKA_CLASS]: pkcs11js.CKO_SECRET_KEY,
        [pkcs11js.CKA_KEY_TYPE]: pkcs11js.CKK_GENERIC_SECRET,
        [pkcs11js.CKA_SIGN]: undefined,
      },
    ],
  ])('unwrapping it %s is refused', async (_, changes) => {
    const { wrapped } = await storedPoolKey();
    const before = await hsm.countSessionObjects();
    const result = outcome(() =>
      raw.C_UnwrapKey(session, KWP, wrappingKey, wrapped, attackerTemplate(changes)),
    );
    // SoftHSM 2.6.1 checks the caller's template against the wrapping key's CKA_UNWRAP_TEMPLATE before
    // it decrypts: every attribute there must be in the caller's template with the same value.
    expect(result).toBe('CKR_TEMPLATE_INCONSISTENT');
    expect(await hsm.countSessionObjects()).toBe(before);
  });

  test('unwrapped with the policy, it is sensitive, non-extractable and stays so', async () => {
    const { wrapped } = await storedPoolKey();
    const key = raw.C_UnwrapKey(session, KWP, wrappingKey, wrapped, attackerTemplate({}));
    try {
      expect(bool(key, pkcs11js.CKA_SENSITIVE)).toBe(true);
      expect(bool(key, pkcs11js.CKA_EXTRACTABLE)).toBe(false);
      expect(bool(key, pkcs11js.CKA_TOKEN)).toBe(false);
      for (const [type, value] of [
        [pkcs11js.CKA_EXTRACTABLE, true],
        [pkcs11js.CKA_SENSITIVE, false],
      ] as const) {
        expect(outcome(() => raw.C_SetAttributeValue(session, key, [{ type, value }]))).toBe(
          'CKR_ATTRIBUTE_READ_ONLY',
        );
      }
    } finally {
      raw.C_DestroyObject(session, key);
    }
  });
});

describe('(2) a fresh pool key wraps only under the trusted wrapping key', () => {
  let poolKey: PrivateKeyRef;

  beforeEach(async () => {
    poolKey = (await hsm.generateKeyPair('EC-P256', { extractable: true })).privateKey;
  });

  afterEach(async () => {
    await hsm.destroy(poolKey);
  });

  test('it carries CKA_WRAP_WITH_TRUSTED, which cannot be taken off', () => {
    expect(bool(poolKey.handle, pkcs11js.CKA_WRAP_WITH_TRUSTED)).toBe(true);
    expect(bool(poolKey.handle, pkcs11js.CKA_EXTRACTABLE)).toBe(true);
    expect(bool(poolKey.handle, pkcs11js.CKA_SENSITIVE)).toBe(true);
    const off = [{ type: pkcs11js.CKA_WRAP_WITH_TRUSTED, value: false }];
    expect(outcome(() => raw.C_SetAttributeValue(session, poolKey.handle, off))).toBe(
      'CKR_ATTRIBUTE_READ_ONLY',
    );
    expect(outcome(() => raw.C_CopyObject(session, poolKey.handle, off))).toBe('CKR_ATTRIBUTE_READ_ONLY');
  });

  test('wrapping it under the attacker’s own AES key is refused', () => {
    const result = outcome(() => raw.C_WrapKey(session, KWP, ownKey, poolKey.handle, Buffer.alloc(4096)));
    expect(result).toBe('CKR_KEY_NOT_WRAPPABLE');
  });

  test('so is wrapping a copy of it', () => {
    const copy = raw.C_CopyObject(session, poolKey.handle, []);
    try {
      expect(outcome(() => raw.C_WrapKey(session, KWP, ownKey, copy, Buffer.alloc(4096)))).toBe(
        'CKR_KEY_NOT_WRAPPABLE',
      );
    } finally {
      raw.C_DestroyObject(session, copy);
    }
  });

  test('the trusted wrapping key wraps it, and wraps nothing of the attacker’s', () => {
    expect(outcome(() => raw.C_WrapKey(session, KWP, wrappingKey, poolKey.handle, Buffer.alloc(4096)))).toBe(
      'OK',
    );
    // Its CKA_WRAP_TEMPLATE admits only private keys with CKA_WRAP_WITH_TRUSTED.
    expect(outcome(() => raw.C_WrapKey(session, KWP, wrappingKey, ownKey, Buffer.alloc(4096)))).toBe(
      'CKR_KEY_NOT_WRAPPABLE',
    );
  });
});

test('(3) the pool path still works: generate, wrap, unwrap, sign, destroy', async () => {
  const before = await hsm.countSessionObjects();
  const { wrapped, spki } = await storedPoolKey();
  const key = await hsm.unwrapPrivateKey(wrapped, 'EC-P256', WRAP);
  try {
    expect(await hsm.keyAttributes(key)).toEqual({
      token: false,
      sensitive: true,
      extractable: false,
      sign: true,
    });
    const data = Buffer.from('trusted wrapping');
    const signature = await hsm.signDigest(key, createHash('sha256').update(data).digest(), {
      digestAlgorithm: 'SHA-256',
      signatureAlgorithm: 'ECDSA',
    });
    expect(
      verify('sha256', data, createPublicKey({ key: spki, format: 'der', type: 'spki' }), signature),
    ).toBe(true);
  } finally {
    await hsm.destroy(key);
  }
  expect(await hsm.countSessionObjects()).toBe(before);
});

test('(4) an unwrapped pool key cannot be wrapped again, under any key', async () => {
  const { wrapped } = await storedPoolKey();
  const key = await hsm.unwrapPrivateKey(wrapped, 'EC-P256', WRAP);
  try {
    for (const wrapper of [ownKey, wrappingKey]) {
      expect(outcome(() => raw.C_WrapKey(session, KWP, wrapper, key.handle, Buffer.alloc(4096)))).toBe(
        'CKR_KEY_UNEXTRACTABLE',
      );
    }
  } finally {
    await hsm.destroy(key);
  }
});
