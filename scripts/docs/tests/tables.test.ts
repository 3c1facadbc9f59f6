/**
 * Each generated region of docs/*.md is what the code gives (npm run docs:tables rewrites them): a code,
 * route, table or schedule added or changed without the docs fails here, naming the page.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { REGIONS, regionsOf, rendered } from '../tables';

const DOCS = join(__dirname, '../../../docs');
const pages = readdirSync(DOCS)
  .filter((f) => f.endsWith('.md'))
  .map((name) => ({ name, text: readFileSync(join(DOCS, name), 'utf8') }));

test('the pages mark every region once', () => {
  const marked = pages.flatMap((p) => regionsOf(p.text)).sort();
  expect(marked).toEqual(Object.keys(REGIONS).sort());
});

test.each(pages.filter((p) => regionsOf(p.text).length > 0).map((p) => [p.name, p.text]))(
  'docs/%s: its generated regions are what the code gives',
  (name, text) => {
    expect(rendered(text, join(DOCS, name))).toBe(text);
  },
);

test('a region that differs from the code is rewritten', () => {
  const stale =
    '# T\n\n<!-- generated:failed-codes -->\n\n| code | message |\n| --- | --- |\n\n<!-- /generated:failed-codes -->\n';
  const fresh = rendered(stale, 'x.md');
  expect(fresh).not.toBe(stale);
  expect(fresh).toContain('`DELIVERY_LOST`');
});
