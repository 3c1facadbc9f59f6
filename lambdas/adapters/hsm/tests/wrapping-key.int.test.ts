/**
 * Provisioning of the wrapping key on a scratch SoftHSM token, in a child process: PKCS#11 logins belong
 * to the whole process, and the security officer's login needs one where nobody else is logged in.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const TSX = join(__dirname, '../../../../node_modules/.bin/tsx');
const MODULE = process.env.HSM_MODULE_PATH || '/usr/lib/softhsm/libsofthsm2.so';

let dir: string;
let conf: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'wrap-key-'));
  conf = join(dir, 'softhsm2.conf');
  writeFileSync(conf, `directories.tokendir = ${dir}\nobjectstore.backend = file\nlog.level = ERROR\n`);
  execFileSync(
    'softhsm2-util',
    ['--init-token', '--free', '--label', 'scratch', '--so-pin', 'so-pin-1', '--pin', 'user-pin-1'],
    { env: { ...process.env, SOFTHSM2_CONF: conf }, stdio: 'ignore' },
  );
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the script in a fresh process on the scratch token and returns what it printed last, as JSON. */
function inChild(script: string): Record<string, unknown> {
  const prelude = `
    const P = require('pkcs11js');
    const { provisionWrappingKey } = require(${JSON.stringify(require.resolve('../src/wrapping-key'))});
    const options = { modulePath: ${JSON.stringify(MODULE)}, tokenLabel: 'scratch', pin: 'user-pin-1' };
    function keys(label) {
      const p = new P.PKCS11(); p.load(options.modulePath); p.C_Initialize();
      const slot = p.C_GetSlotList(true).find((s) => p.C_GetTokenInfo(s).label.trim() === 'scratch');
      const s = p.C_OpenSession(slot, P.CKF_SERIAL_SESSION | P.CKF_RW_SESSION);
      p.C_Login(s, P.CKU_USER, options.pin);
      p.C_FindObjectsInit(s, [{ type: P.CKA_LABEL, value: label }]);
      const found = p.C_FindObjects(s, 10); p.C_FindObjectsFinal(s);
      const read = (h, t) => p.C_GetAttributeValue(s, h, [{ type: t }])[0].value[0] === 1;
      const out = found.map((h) => ({ trusted: read(h, P.CKA_TRUSTED), private: read(h, P.CKA_PRIVATE),
        modifiable: read(h, P.CKA_MODIFIABLE) }));
      return { p, s, found, out, done: () => { p.C_Logout(s); p.C_CloseSession(s); p.C_Finalize(); } };
    }`;
  const out = execFileSync(
    TSX,
    [
      '-e',
      `${prelude}\n(async () => { ${script} })().catch((e) => console.log(JSON.stringify({ error: e.message })));`,
    ],
    {
      env: { ...process.env, SOFTHSM2_CONF: conf },
      encoding: 'utf8',
    },
  );
  return JSON.parse(out.trim().split('\n').pop()!) as Record<string, unknown>;
}

test('on SoftHSM the security officer replaces an untrusted wrapping key by a trusted one, once', () => {
  const result = inChild(`
    // A wrapping key as the bootstrap made it before keys had to wrap under trust.
    const old = keys('pool-wrap-v1');
    old.p.C_GenerateKey(old.s, { mechanism: P.CKM_AES_KEY_GEN }, [
      { type: P.CKA_TOKEN, value: true }, { type: P.CKA_PRIVATE, value: true }, { type: P.CKA_VALUE_LEN, value: 32 },
      { type: P.CKA_SENSITIVE, value: true }, { type: P.CKA_EXTRACTABLE, value: false },
      { type: P.CKA_WRAP, value: true }, { type: P.CKA_UNWRAP, value: true }, { type: P.CKA_LABEL, value: 'pool-wrap-v1' }]);
    old.done();
    const softhsm = { ...options, profile: 'softhsm', soPin: 'so-pin-1' };
    const first = await provisionWrappingKey(softhsm, 'pool-wrap-v1');
    const second = await provisionWrappingKey(softhsm, 'pool-wrap-v1');
    const fresh = await provisionWrappingKey(softhsm, 'pool-wrap-v2');
    const noSoPin = await provisionWrappingKey({ ...options, profile: 'softhsm' }, 'pool-wrap-v3').catch((e) => e.message);
    const v1 = keys('pool-wrap-v1'); v1.done();
    console.log(JSON.stringify({ first, second, fresh, noSoPin, keys: v1.out }));`);
  expect(result).toEqual({
    first: { change: 'replaced', present: true, trusted: true },
    second: { change: 'none', present: true, trusted: true },
    fresh: { change: 'created', present: true, trusted: true },
    noSoPin: expect.stringContaining('no SO PIN was given'),
    keys: [{ trusted: true, private: false, modifiable: false }],
  });
});

test('a crypto user’s key (the CloudHSM way) is made in the user’s session and wraps no pool key until trusted', () => {
  const result = inChild(`
    const cloudhsm = { ...options, profile: 'cloudhsm' };
    const before = await provisionWrappingKey({ ...cloudhsm, inspectOnly: true }, 'cu-wrap-v1');
    const first = await provisionWrappingKey(cloudhsm, 'cu-wrap-v1');
    const second = await provisionWrappingKey(cloudhsm, 'cu-wrap-v1');
    const k = keys('cu-wrap-v1');
    const pair = k.p.C_GenerateKeyPair(k.s, { mechanism: P.CKM_EC_KEY_PAIR_GEN },
      [{ type: P.CKA_TOKEN, value: false }, { type: P.CKA_EC_PARAMS, value: Buffer.from('06082a8648ce3d030107', 'hex') }],
      [{ type: P.CKA_TOKEN, value: false }, { type: P.CKA_SENSITIVE, value: true }, { type: P.CKA_EXTRACTABLE, value: true },
       { type: P.CKA_WRAP_WITH_TRUSTED, value: true }, { type: P.CKA_SIGN, value: true }]);
    let wrap = 'OK';
    try { k.p.C_WrapKey(k.s, { mechanism: P.CKM_AES_KEY_WRAP_PAD }, k.found[0], pair.privateKey, Buffer.alloc(4096)); }
    catch (e) { wrap = String(e.message).split(':')[0]; }
    k.done();
    console.log(JSON.stringify({ before, first, second, keys: k.out, wrap }));`);
  expect(result).toEqual({
    before: { change: 'none', present: false, trusted: false },
    first: { change: 'created', present: true, trusted: false },
    second: { change: 'none', present: true, trusted: false },
    keys: [{ trusted: false, private: true, modifiable: true }],
    wrap: 'CKR_KEY_NOT_WRAPPABLE',
  });
});
