/**
 * The fault-injection suites alone (npm run test:faults): the main configuration (same global set-up:
 * stand-ins, SoftHSM environment) with only scripts/local/faults as its root. The main run skips them.
 * @type {import('jest').Config}
 */
const base = require('../../../jest.config.js');

module.exports = {
  ...base,
  rootDir: '../../..',
  roots: ['<rootDir>/scripts/local/faults'],
  // The unit tests of the fault injection itself run in the main suite.
  testMatch: ['**/*.e2e.test.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  // One suite at a time: each runs a whole pipeline with its own consumers (and stand-ins) on 2 cores.
  maxWorkers: 1,
};
