/**
 * The client code registry (core CLIENT_CODES), docs/api.md and openapi.json list the same codes, with
 * the same HTTP statuses: a code added, removed or re-statused in one place and not the others fails
 * here, naming the difference.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLIENT_CODES, type ClientCode } from '@pipeline/core/shared';
import openapi from '../openapi.json';

interface Listed {
  /** code -> HTTP status, for the codes an HTTP call is refused with. */
  readonly http: Map<string, number>;
  /** Codes a failed request carries. */
  readonly failed: Set<string>;
}

const registry: Listed = (() => {
  const entries = Object.entries(CLIENT_CODES as Readonly<Record<string, ClientCode>>);
  return {
    http: new Map(entries.filter(([, c]) => c.status !== undefined).map(([code, c]) => [code, c.status!])),
    failed: new Set(entries.filter(([, c]) => c.failedRequest).map(([code]) => code)),
  };
})();

/** The rows of the markdown table under a heading: each row's cells. */
function tableRows(markdown: string, heading: string): string[][] {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`docs/api.md has no section "${heading}"`);
  const next = markdown.indexOf('\n## ', start + 1);
  const section = markdown.slice(start, next < 0 ? undefined : next);
  return section
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|\s*-/.test(line))
    .slice(1) // the header row
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
}

/** The codes in a table cell: `CODE`s, not wildcards such as `ASSERTION_*`. */
const codesIn = (cell: string): string[] =>
  [...cell.matchAll(/`([A-Z][A-Z0-9_]*[A-Z0-9])`/g)].map((m) => m[1]);

const docs: Listed = (() => {
  const markdown = readFileSync(join(__dirname, '../../../docs/api.md'), 'utf8');
  const http = new Map<string, number>();
  for (const [status, codes] of tableRows(markdown, 'Errors of the HTTP calls')) {
    for (const code of codesIn(codes)) http.set(code, Number(status));
  }
  const failed = new Set(
    tableRows(markdown, 'Codes of a failed request').flatMap(([codes]) => codesIn(codes)),
  );
  return { http, failed };
})();

const document: Listed = (() => {
  const listed = (openapi as unknown as Record<string, unknown>)['x-error-codes'] as Record<
    string,
    { status?: number; failedRequest?: boolean }
  >;
  const entries = Object.entries(listed ?? {});
  return {
    http: new Map(entries.filter(([, c]) => c.status !== undefined).map(([code, c]) => [code, c.status!])),
    failed: new Set(entries.filter(([, c]) => c.failedRequest).map(([code]) => code)),
  };
})();

/** What one listing has that the other lacks or states differently, as readable lines. */
function differences(name: string, actual: Listed, expected: Listed): string[] {
  const out: string[] = [];
  for (const [code, status] of expected.http) {
    if (!actual.http.has(code)) out.push(`${name} lacks HTTP code ${code} (${status})`);
    else if (actual.http.get(code) !== status)
      out.push(`${name} answers ${code} with ${actual.http.get(code)}, the registry with ${status}`);
  }
  for (const code of actual.http.keys()) {
    if (!expected.http.has(code)) out.push(`${name} lists HTTP code ${code}, the registry does not`);
  }
  for (const code of expected.failed) {
    if (!actual.failed.has(code)) out.push(`${name} lacks failed-request code ${code}`);
  }
  for (const code of actual.failed) {
    if (!expected.failed.has(code))
      out.push(`${name} lists failed-request code ${code}, the registry does not`);
  }
  return out;
}

test('the registry lists codes, each with an HTTP status or as a failed request code, and a message', () => {
  expect(registry.http.size).toBeGreaterThan(30);
  expect(registry.failed.size).toBeGreaterThan(20);
  for (const [code, entry] of Object.entries(CLIENT_CODES as Readonly<Record<string, ClientCode>>)) {
    expect(`${code}: ${entry.status !== undefined || entry.failedRequest === true}`).toBe(`${code}: true`);
    expect(entry.message.length).toBeGreaterThan(0);
  }
});

test('docs/api.md lists exactly the registry codes, with the same statuses', () => {
  expect(differences('docs/api.md', docs, registry)).toEqual([]);
});

test('openapi.json (x-error-codes) lists exactly the registry codes, with the same statuses', () => {
  expect(differences('openapi.json', document, registry)).toEqual([]);
});

test('a difference is named', () => {
  const changed: Listed = {
    http: new Map([...registry.http, ['NEW_CODE', 400]]),
    failed: new Set([...registry.failed].filter((c) => c !== 'DELIVERY_LOST')),
  };
  changed.http.set('NOT_FOUND', 410);
  expect(differences('docs', changed, registry)).toEqual([
    'docs answers NOT_FOUND with 410, the registry with 404',
    'docs lists HTTP code NEW_CODE, the registry does not',
    'docs lacks failed-request code DELIVERY_LOST',
  ]);
});
