/**
 * What the deployed functions contain: each handler bundled as the CDK app bundles it (esbuild, CJS,
 * pkcs11js external). No test-only code can be switched on in a deployment: the bundles hold neither
 * the HSM fault injection nor anything from lambdas/test-support, nor the wrapping key's provisioning.
 */
import { readdirSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildSync } from 'esbuild';
import { NODE_MAJOR } from '../cdk/lib/platform';

const HANDLERS = resolve(__dirname, '../lambdas/handlers');
const entries = readdirSync(HANDLERS)
  .map((name) => ({ name, entry: join(HANDLERS, name, 'index.ts') }))
  .filter(({ entry }) => existsSync(entry));

test('every function with an index.ts is bundled and checked', () => {
  expect(entries.map((e) => e.name)).toEqual(expect.arrayContaining(['api', 'ca', 'keygen', 'signer']));
});

test.each(entries)('the $name bundle holds no fault injection and no test support', ({ entry }) => {
  const out = buildSync({
    entryPoints: [entry],
    bundle: true,
    write: false,
    platform: 'node',
    format: 'cjs',
    target: `node${NODE_MAJOR}`,
    external: ['pkcs11js'],
    metafile: true,
    logLevel: 'silent',
  });
  const inputs = Object.keys(out.metafile!.inputs);
  expect(inputs.filter((path) => /test-support|hsm-fault-injection|scripts\//.test(path))).toEqual([]);
  // Provisioning the wrapping key (and koffi, its FFI) is for the bootstrap and operators only.
  expect(inputs.filter((path) => /koffi|nested-template|wrapping-key/.test(path))).toEqual([]);
  const code = out.outputFiles[0].text;
  expect(code).not.toContain('HSM_FAULT_RATE');
  expect(code).not.toContain('INJECTED_FAULT');
});
