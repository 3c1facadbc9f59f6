/**
 * The reference tables of docs/ whose truth is the code: each is a marked region of a page,
 * `<!-- generated:NAME -->` ... `<!-- /generated:NAME -->`, rewritten by `npm run docs:tables` and held
 * to the code by scripts/docs/tests/tables.test.ts. Text around a region is the page's own.
 */
import { CLIENT_CODES, type ClientCode } from '@pipeline/core/shared';
import {
  API_STAGE,
  CSC_BASE_PATH,
  CSC_ROUTES,
  OCSP_ROUTES,
  QUEUES,
  ROUTES,
  SCHEDULES,
  TABLES,
  TSA_ROUTES,
  type QueueDefinition,
  type ScheduleDefinition,
  type TableDefinition,
} from '@pipeline/resources';

/** A markdown table, unpadded: its region is outside prettier's formatting (prettier-ignore). */
function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

const codes = Object.entries(CLIENT_CODES as Readonly<Record<string, ClientCode>>);

/** The generated regions by name: page text between the markers. */
export const REGIONS: Readonly<Record<string, () => string>> = {
  'http-codes': () =>
    table(
      ['status', 'code', 'message'],
      codes
        .filter(([, c]) => c.status !== undefined)
        .sort(([, a], [, b]) => a.status! - b.status!)
        .map(([code, c]) => [String(c.status), `\`${code}\``, c.message]),
    ),
  'failed-codes': () =>
    table(
      ['code', 'message'],
      codes.filter(([, c]) => c.failedRequest).map(([code, c]) => [`\`${code}\``, c.message]),
    ),
  routes: () =>
    table(
      ['route', 'caller'],
      [
        ...ROUTES.map((r) => [
          `\`${r.method} /${API_STAGE}${r.resource}\``,
          r.authenticated ? 'SigV4 and API key' : 'anyone',
        ]),
        ...CSC_ROUTES.map((r) => [
          `\`${r.method} ${CSC_BASE_PATH}${r.resource}\``,
          "the CSC API's own ([csc.md](csc.md))",
        ]),
        ...[...OCSP_ROUTES, ...TSA_ROUTES].map((r) => [
          `\`${r.method} <PKI_BASE_URL>${r.resource}\``,
          'anyone, rate-limited',
        ]),
      ],
    ),
  tables: () =>
    table(
      ['table (`TABLES`)', 'name from', 'key', 'TTL'],
      Object.entries(TABLES as Readonly<Record<string, TableDefinition>>).map(([key, t]) => [
        `\`${key}\``,
        `\`${t.envVar}\``,
        [t.partitionKey, t.sortKey].flatMap((k) => (k ? [`\`${k.name}\``] : [])).join(', '),
        t.ttlAttribute ? `\`${t.ttlAttribute}\`` : '',
      ]),
    ),
  queues: () =>
    table(
      ['queue (`QUEUES`)', 'URL from', 'deliveries', 'visibility', 'dead letters'],
      Object.entries(QUEUES as Readonly<Record<string, QueueDefinition>>).map(([key, q]) => [
        `\`${key}\``,
        `\`${q.envVar}\``,
        String(q.maxReceiveCount),
        `${q.visibilityTimeoutSeconds} s`,
        `\`${q.deadLetter.envVar}\``,
      ]),
    ),
  schedules: () =>
    table(
      ['schedule (`SCHEDULES`)', 'every', 'timeout', 'what it does'],
      Object.entries(SCHEDULES as Readonly<Record<string, ScheduleDefinition>>).map(([key, s]) => [
        `\`${key}\``,
        `${s.rateMinutes} min`,
        `${s.timeoutSeconds} s`,
        s.description,
      ]),
    ),
};

const REGION = /(<!-- generated:([a-z-]+) -->)[\s\S]*?(<!-- \/generated:\2 -->)/g;

/** A page with every generated region rewritten from the code. */
export function rendered(page: string, path: string): string {
  return page.replace(REGION, (_all, open: string, name: string, close: string) => {
    const region = REGIONS[name];
    if (!region) throw new Error(`${path}: no generated region "${name}"`);
    return `${open}\n<!-- prettier-ignore-start -->\n\n${region()}\n\n<!-- prettier-ignore-end -->\n${close}`;
  });
}

/** The names of the regions a page marks. */
export const regionsOf = (page: string): string[] => [...page.matchAll(REGION)].map((m) => m[2]);
