/**
 * One Node.js everywhere: the devDependency "node", pinned exactly, runs the tests, the tools and the
 * local runner (npm scripts put node_modules/.bin first on PATH), and its major is the Lambda runtime's.
 */
import packageJson from '../package.json';
import { LAMBDA_RUNTIME, NODE_MAJOR } from '../cdk/lib/platform';

const pinned = packageJson.devDependencies.node;

test("the project's Node.js is pinned exactly, with the Lambda runtime's major and its types", () => {
  expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
  expect(pinned.split('.')[0]).toBe(String(NODE_MAJOR));
  expect(LAMBDA_RUNTIME.name).toBe(`nodejs${NODE_MAJOR}.x`);
  expect(packageJson.devDependencies['@types/node'].split('.')[0]).toBe(String(NODE_MAJOR));
});

test('the tests run on it', () => {
  expect(process.versions.node).toBe(pinned);
});
