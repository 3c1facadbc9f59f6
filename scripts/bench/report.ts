import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../local/paths';

export type Row = Record<string, string | number>;

/** The value after `--name` on a suite's command line, if given. */
export function option(args: readonly string[], name: string): string | undefined {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
}

/** Prints rows as an aligned text table. */
export function printTable(title: string, rows: readonly Row[]): void {
  console.log(`\n${title}`);
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]);
  const cell = (v: string | number | undefined): string =>
    typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(3)) : (v ?? '');
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (values: string[]): string => values.map((v, i) => v.padStart(widths[i])).join('  ');
  console.log(line(columns));
  console.log(line(widths.map((w) => '-'.repeat(w))));
  for (const row of rows) console.log(line(columns.map((c) => cell(row[c]))));
}

/**
 * Ends a suite: writes bench/results/<suite>.json and prints the same object as the last line of output,
 * so scripts can take the figures from either place.
 */
export function finish(suite: string, result: Record<string, unknown>): void {
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const full = { suite, at: new Date().toISOString(), machine: machine(), ...result };
  writeFileSync(join(dir, `${suite}.json`), `${JSON.stringify(full, null, 2)}\n`);
  console.log(JSON.stringify(full));
}

function machine(): Record<string, unknown> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const os = require('node:os') as typeof import('node:os');
  return { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version };
}
