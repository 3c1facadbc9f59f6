/**
 * The lint enforces the layers: a file of a lower layer importing an upper one fails `npm run lint`, so
 * does an import of another package other than through its index by alias (@pipeline/<name>; the core
 * through the entry points of its concerns, @pipeline/core/<concern>, tests included), and so does dead
 * code. Probe files are written where such code would live, checked, and removed.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const ROOT = join(__dirname, '..');

/** Import declarations, and `import()` expressions (which no-restricted-imports does not see). */
const LAYER_RULES = ['@typescript-eslint/no-restricted-imports', 'layering/dynamic-imports'];

const refused: Array<[string, string]> = [
  ['lambdas/core/src', "import { connectHsm } from '../../adapters/hsm/src';"],
  ['lambdas/core/src', "import { connectHsm } from '@pipeline/adapters/hsm';"],
  ['lambdas/core/src', "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';"],
  ['lambdas/core/src/audit', "import { AuditLog } from '../../../audit/src';"],
  ['lambdas/adapters/dynamodb/src', "import { CaError } from '../../../ca/src/errors';"],
  ['lambdas/adapters/dynamodb/src', "import { wire } from '../../../handlers/shared/wiring';"],
  ['lambdas/ca/src', "import { storedPoolKeys } from '../../test-support/dynamodb';"],
  ['lambdas/ca/src', "import { connectHsm } from '../../adapters/hsm/src';"],
  ['lambdas/ca/src', "import { connectHsm } from '@pipeline/adapters/hsm';"],
  ['lambdas/adapters/dynamodb/src', "import { CertificateAuthority } from '@pipeline/ca';"],
  // The services use the core's ports; the handlers wire the adapters to them.
  ['lambdas/audit/src', "import { AuditRepository } from '@pipeline/adapters/dynamodb';"],
  ['lambdas/audit/src', "import type { DynamoDBDocumentClient } from '@pipeline/adapters/aws';"],
  ['lambdas/ca/src', "import { SsmParameterStore } from '@pipeline/adapters/parameters';"],
  ['lambdas/api/src', "import { RequestRepository } from '@pipeline/adapters/dynamodb';"],
  // The doors are services: they call the intake and the ports, the handlers wire the adapters to them.
  ['lambdas/csc/src', "import { CscRepository } from '@pipeline/adapters/dynamodb';"],
  ['lambdas/doors/src', "import { OidcRelyingParty } from '@pipeline/adapters/oidc';"],
  ['lambdas/adapters/dynamodb/src', "import { handleCscEvent } from '@pipeline/csc';"],
  ['lambdas/api/src', "import { headerOf } from '../../doors/src/http';"],
  ['lambdas/der/src', "export const load = (): Promise<unknown> => import('@pipeline/adapters/aws');"],
  ['lambdas/handlers/signer', "import { storedPoolKeys } from '../../test-support/dynamodb';"],
  ['cdk/lib', "import { wireKeygen } from '../../lambdas/handlers/keygen/handler';"],
  ['cdk/lib', "import { startLocalPipeline } from '../../scripts/local/runner/pipeline';"],
  // The AWS SDK is for adapters only, type imports included.
  ['lambdas/config/src', "import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';"],
  ['lambdas/ca/src', "import { GetParametersCommand } from '@aws-sdk/client-ssm';"],
  ['lambdas/handlers/revoke', "import { InvokeCommand } from '@aws-sdk/client-lambda';"],
  ['lambdas/handlers/shared', "import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';"],
  ['lambdas/resources/src', "import { CreateTableCommand } from '@aws-sdk/client-dynamodb';"],
  // Inside the core, a concern imports only the concerns on the floors below it (eslint.config.mjs,
  // CORE_FLOORS): shared < identity < pki < audit < pool < signing, and not the core's index.
  ['lambdas/core/src/shared', "import { AssertionError } from '../identity/errors';"],
  ['lambdas/core/src/identity', "import type { SignRequestRecord } from '../signing/sign-request';"],
  ['lambdas/core/src/identity', "import { merkleRoot } from '../audit/merkle';"],
  ['lambdas/core/src/identity', "import { levelAtLeast } from '..';"],
  ['lambdas/core/src/pki', "import type { SignRequestRecord } from '../signing/sign-request';"],
  ['lambdas/core/src/audit', "import type { KeyPoolStore } from '../pool/pool';"],
  ['lambdas/core/src/pool', "import { processSignRequest } from '../signing/signing';"],
  ['lambdas/core/src/pki', "export const load = (): Promise<unknown> => import('../signing/signing');"],
  // Dynamic imports are held to the same rules.
  ['lambdas/core/src', "export const load = (): Promise<unknown> => import('@aws-sdk/client-ssm');"],
  [
    'lambdas/handlers/signer',
    "export const load = (): Promise<unknown> => import('../../test-support/env');",
  ],
  // Another package is imported by its alias, through its index: not by a path into its src, not past it.
  ['lambdas/handlers/signer', "import { processSignRequest } from '../../core/src';"],
  ['lambdas/handlers/signer', "import { processSignRequest } from '../../core/src/signing/signing';"],
  ['lambdas/adapters/hsm/src', "import { resolvePin } from '../../parameters/src/pin';"],
  ['lambdas/adapters/dynamodb/src', "import { PipelineError } from '@pipeline/core/shared/errors';"],
  ['lambdas/handlers/api', "import { connectHsm } from '@pipeline/adapters/hsm/connect';"],
  ['scripts', "import { AuditRepository } from '../lambdas/adapters/dynamodb/src/audit-repository';"],
  [
    'scripts/local',
    "import { CertificateRepository } from '@pipeline/adapters/dynamodb/certificate-repository';",
  ],
  ['cdk/lib', "import { PKI_OBJECTS } from '../../lambdas/core/src/pki/revocation';"],
  // The core has no index: outside lambdas/core, tests included, it is imported by the entry point of a
  // concern (@pipeline/core/<concern>), never past it, never by a path into lambdas/core/src.
  ['lambdas/adapters/dynamodb/src', "import { Coalescer } from '@pipeline/core';"],
  ['lambdas/handlers/signer', "import { processSignRequest } from '@pipeline/core/signing/signing';"],
  ['cdk/lib', "import { PKI_OBJECTS } from '../../lambdas/core/src/pki';"],
  ['scripts', "export const load = (): Promise<unknown> => import('@pipeline/core');"],
  ['lambdas/api/tests', "import { canonicalJson } from '@pipeline/core/audit/canonical';"],
  ['infra-tests', "import { PKI_OBJECTS } from '../lambdas/core/src/pki/revocation';"],
  [
    'scripts/local/runner/tests',
    "export const load = (): Promise<unknown> => import('../../../../lambdas/core/src/audit');",
  ],
  [
    'lambdas/handlers/signer',
    "export const load = (): Promise<unknown> => import('../../core/src/pool/pool');",
  ],
  // Functions are hosted through their factories (lambdas/handlers' index), not an entry point that wires
  // itself at import, and not a handler's files.
  [
    'scripts/local/runner',
    "export const load = (): Promise<unknown> => import('../../../lambdas/handlers/ocsp');",
  ],
  ['scripts/local/runner', "import { wireSigner } from '../../../lambdas/handlers/signer/handler';"],
  // Test support and the local environment do not build on each other, either way.
  ['lambdas/test-support', "import { ROOT } from '../../scripts/local/paths';"],
  ['scripts/local', "import { storedPoolKeys } from '../../lambdas/test-support/dynamodb';"],
  [
    'scripts/local/runner',
    "export const load = (): Promise<unknown> => import('../../../lambdas/test-support/env');",
  ],
];
const allowed: Array<[string, string]> = [
  ['lambdas/core/src/identity', "import { PipelineError } from '../shared/errors';"],
  ['lambdas/core/src/pki', "import { AssertionError } from '../identity/errors';"],
  ['lambdas/core/src/audit', "import { REVOCATION_REASONS } from '../pki/revocation';"],
  ['lambdas/core/src/signing', "import { hashIds } from '../audit';"],
  ['lambdas/adapters/dynamodb/src', "import { Coalescer } from '@pipeline/core/shared';"],
  ['lambdas/adapters/hsm/src', "import { resolvePin } from '@pipeline/adapters/parameters';"],
  ['scripts', "import { AuditRepository } from '@pipeline/adapters/dynamodb';"],
  ['scripts', "import { provisionWrappingKey } from '@pipeline/adapters/hsm/provisioning';"],
  ['cdk/lib', "import { PKI_OBJECTS } from '@pipeline/core/pki';"],
  ['lambdas/handlers/signer', "import { wire } from '../shared/wiring';"],
  ['lambdas/ca/src', "import { isKeyType } from '@pipeline/core/shared';"],
  ['lambdas/api/tests', "import { canonicalJson } from '@pipeline/core/audit';"],
  ['scripts/local/runner', "export const load = (): Promise<unknown> => import('@pipeline/core/signing');"],
  ['lambdas/core/tests', "import { storedPoolKeys } from '../../test-support/dynamodb';"],
  ['lambdas/core/tests', "import { createTestTables } from '../../../scripts/local/resources';"],
  ['scripts/local/runner', "import { createSignerHandler, wireSigner } from '../../../lambdas/handlers';"],
  ['lambdas/adapters/parameters/src', "import { SSMClient } from '@aws-sdk/client-ssm';"],
  ['lambdas/handlers/shared', "import type { DynamoDBDocumentClient } from '@pipeline/adapters/aws';"],
  // Tests may reach into a package's files (the core's files: its own tests only).
  ['lambdas/core/tests', "import { AuditRepository } from '../../adapters/dynamodb/src/audit-repository';"],
  ['lambdas/core/tests', "import { canonicalPublicKey } from '../src/pki/public-key';"],
];

test('lower layers importing upper ones (or test support) are lint errors; imports within the rules are not', () => {
  const tag = randomBytes(4).toString('hex');
  const probes = [...refused, ...allowed].map(([dir, line], i) => {
    const file = join(ROOT, dir, `zz-layering-${tag}-${i}${dir.endsWith('tests') ? '.test' : ''}.ts`);
    writeFileSync(file, `${line}\nexport const used = 1;\n`);
    return file;
  });
  try {
    const run = spawnSync(join(ROOT, 'node_modules/.bin/eslint'), ['--format', 'json', ...probes], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    const results = JSON.parse(run.stdout) as Array<{
      filePath: string;
      messages: Array<{ ruleId: string }>;
    }>;
    // Whether the lint refuses the import (a relative path into an upper layer's src breaks two rules).
    const flagged = (file: string): number =>
      Math.min(
        1,
        results.find((r) => r.filePath === file)!.messages.filter((m) => LAYER_RULES.includes(m.ruleId))
          .length,
      );
    const outcome = probes.map((file, i) => [
      relative(ROOT, dirname(file)),
      [...refused, ...allowed][i][1],
      flagged(file),
    ]);
    expect(outcome).toEqual([
      ...refused.map(([dir, line]) => [dir, line, 1]),
      ...allowed.map(([dir, line]) => [dir, line, 0]),
    ]);
  } finally {
    for (const file of probes) rmSync(file, { force: true });
  }
});

test('the dead-code check (knip) reports a module nothing imports and an export nothing uses', () => {
  const tag = randomBytes(4).toString('hex');
  const module = join(ROOT, 'lambdas/core/src', `zz-dead-${tag}.ts`);
  const orphan = join(ROOT, 'lambdas/core/src', `zz-orphan-${tag}.ts`);
  const user = join(ROOT, 'lambdas/core/tests', `zz-dead-${tag}.test.ts`);
  writeFileSync(module, 'export const used = 1;\nexport const unused = 2;\n');
  writeFileSync(orphan, 'export const nobody = 3;\n');
  writeFileSync(
    user,
    `import { used } from '../src/zz-dead-${tag}';\ntest('used', () => expect(used).toBe(1));\n`,
  );
  try {
    const run = spawnSync(join(ROOT, 'node_modules/.bin/knip'), ['--reporter', 'json', '--no-progress'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    const report = JSON.parse(run.stdout) as {
      issues: Array<{ file: string; files: Array<{ name: string }>; exports: Array<{ name: string }> }>;
    };
    const of = (file: string) => report.issues.find((i) => i.file === relative(ROOT, file));
    expect(of(orphan)?.files).toEqual([{ name: relative(ROOT, orphan) }]);
    expect(of(module)?.exports.map((e) => e.name)).toEqual(['unused']);
    expect(of(user)).toBeUndefined();
  } finally {
    for (const file of [module, orphan, user]) rmSync(file, { force: true });
  }
});
