/**
 * The function specs (cdk/lib/functions/<name>.ts) as the CDK app builds them: one per handler, each
 * environment variable named by the definition lambdas/config reads it by, and each login the declared
 * crypto user's. No bundling: the code assets do not matter here (stack.test.ts bundles).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { ENV } from '@pipeline/config';
import { QUEUES, TABLES } from '@pipeline/resources';
import { FUNCTION_SPECS } from '../cdk/lib/constructs/functions';
import {
  checkLogin,
  type FunctionDeps,
  type FunctionName,
  type FunctionSpec,
} from '../cdk/lib/functions/spec';
import { readSettings } from '../cdk/lib/settings';
import { resources, synthesize, type Synthesized } from './support/synth';

let synth: Synthesized;
let deps: FunctionDeps;

/** The pipeline's functions in the template (not the custom resources' own). */
function pipelineFunctions(): { Properties?: Record<string, unknown> }[] {
  return Object.values(resources(synth.template, 'AWS::Lambda::Function')).filter((fn) =>
    String((fn.Metadata as Record<string, unknown> | undefined)?.['aws:cdk:path']).startsWith(
      'SigningPipelineStack/Functions/',
    ),
  );
}

beforeAll(() => {
  // With every optional function and variable: the DSS-Ext door (placeholders for its required
  // settings), the CSC API (on by default).
  synth = synthesize(
    {
      dssExtEnabled: true,
      dssExtSpEntityId: 'https://sign.example.se/dss/sp',
      dssExtDefaultLoa: 'http://id.elegnamnden.se/loa/1.0/loa4',
    },
    { bundle: false },
  );
  const { stack } = synth;
  const byName = (name: FunctionName): NodejsFunction => {
    const property = name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    return stack.functions[property as 'api'];
  };
  deps = {
    settings: readSettings(stack.node),
    hsm: stack.hsm,
    tables: stack.tables,
    signQueue: stack.signQueue,
    identity: stack.identity,
    cscSecrets: stack.cscSecrets,
    dssExtSecrets: stack.dssExtSecrets,
    fn: byName,
  };
}, 180_000);

/** Set by the CDK app for the runtime and Powertools, read by neither lambdas/config nor the app. */
const PLATFORM_VARIABLES = [
  'POWERTOOLS_SERVICE_NAME',
  'POWERTOOLS_METRICS_NAMESPACE',
  'LOG_LEVEL',
  'NODE_OPTIONS',
];

it('has one spec per handler folder, each name once', () => {
  const names = FUNCTION_SPECS.map((spec) => spec.name);
  expect(new Set(names).size).toBe(names.length);
  for (const name of names) {
    expect(existsSync(join(__dirname, '..', 'lambdas', 'handlers', name, 'index.ts'))).toBe(true);
  }
  expect(pipelineFunctions()).toHaveLength(names.length);
});

it('names every variable it sets by ENV, TABLES[].envVar or QUEUES[].envVar (one definition with lambdas/config)', () => {
  const shared = new Set<string>([
    ...Object.values(ENV),
    ...Object.values(TABLES).map((t) => t.envVar),
    ...Object.values(QUEUES).flatMap((q) => [q.envVar, q.deadLetter.envVar]),
    ...PLATFORM_VARIABLES,
  ]);
  const set = pipelineFunctions().flatMap((fn) =>
    Object.keys((fn.Properties!.Environment as { Variables: Record<string, unknown> }).Variables),
  );
  expect(set.length).toBeGreaterThan(50);
  expect([...new Set(set)].filter((name) => !shared.has(name))).toEqual([]);
});

describe('login', () => {
  const spec = (name: FunctionName): FunctionSpec => FUNCTION_SPECS.find((s) => s.name === name)!;

  it.each(FUNCTION_SPECS.map((s) => [s.name, s] as const))(
    '%s: its environment logs in as its declared crypto user, or not at all',
    (_, s) => {
      expect(() => checkLogin(s, deps, s.environment(deps))).not.toThrow();
    },
  );

  it('refuses a spec whose environment logs in as another crypto user than the one it declares', () => {
    const ca = spec('ca');
    // The CA's environment (the CA user's PIN) under the pool user: its secret would refuse the function.
    const asPool: FunctionSpec = { ...ca, network: { kind: 'hsm', cryptoUser: 'pool' } };
    expect(() => checkLogin(asPool, deps, ca.environment(deps))).toThrow(/crypto user/);
  });

  it('refuses a login outside the HSM network', () => {
    const reconcile = spec('reconcile');
    const withPin = { ...reconcile.environment(deps), [ENV.HSM_PIN_SOURCE]: 'env:HSM_PIN' };
    expect(() => checkLogin(reconcile, deps, withPin)).toThrow(/crypto user/);
  });
});
