/**
 * One Jest run for everything. Integration tests reach SoftHSM (through the token the bootstrap made)
 * and the DynamoDB Local / ElasticMQ stand-ins, which the global setup starts once for the whole run.
 * @type {import('jest').Config}
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/lambdas', '<rootDir>/scripts', '<rootDir>/infra-tests', '<rootDir>/cdk'],
  testMatch: ['**/*.test.ts'],
  // The fault-injection suites (whole pipelines with kills and outages) run apart: npm run test:faults.
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/scripts/local/faults/tests/.*\\.e2e\\.test\\.ts$'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json' }],
    // jose, openid-client, oauth4webapi, p-limit and @middy/core ship ES modules only; Jest's module system loads CommonJS, so
    // their files are compiled to it (tsx and esbuild load them as they are).
    '^.+\\.js$': ['ts-jest', { tsconfig: { allowJs: true, module: 'commonjs', target: 'ES2022' } }],
  },
  transformIgnorePatterns: [
    '/node_modules/(?!(jose|openid-client|oauth4webapi|p-limit|yocto-queue|@middy/core)/)',
  ],
  globalSetup: '<rootDir>/scripts/local/jest/global-setup.ts',
  globalTeardown: '<rootDir>/scripts/local/jest/global-teardown.ts',
  maxWorkers: 2,
  testTimeout: 60_000,
  modulePathIgnorePatterns: ['<rootDir>/cdk.out', '<rootDir>/.local'],
  // The packages' aliases (tsconfig.json paths): @pipeline/<name> is lambdas/<name>/src (its index), and
  // @pipeline/core/<concern> lambdas/core/src/<concern> (the core has no index of its own).
  moduleNameMapper: {
    '^@pipeline/adapters/hsm/provisioning$': '<rootDir>/lambdas/adapters/hsm/src/provisioning',
    '^@pipeline/adapters/([a-z0-9-]+)$': '<rootDir>/lambdas/adapters/$1/src',
    '^@pipeline/core/(audit|csc|forecast|identity|pki|planning|pool|shared|signing)$':
      '<rootDir>/lambdas/core/src/$1',
    '^@pipeline/([a-z0-9-]+)$': '<rootDir>/lambdas/$1/src',
  },
};
