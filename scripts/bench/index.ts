/**
 * `npm run bench -- <suite> [options]`: benchmark suites. Each prints a human table and, as its last
 * line, one JSON object with every figure (also written to bench/results/<suite>.json).
 */
import { useLocalHsmEnv } from '../local/token';

type Suite = (args: string[]) => Promise<void>;

const SUITES: Record<string, () => Promise<Suite>> = {
  hsm: async () => (await import('./hsm')).run,
  ceiling: async () => (await import('./ceiling')).run,
  e2e: async () => (await import('./e2e')).run,
  pool: async () => (await import('./pool')).run,
  audit: async () => (await import('./audit')).run,
  levels: async () => (await import('./levels')).run,
  documents: async () => (await import('./documents')).run,
  certificate: async () => (await import('./certificate')).run,
  csc: async () => (await import('./csc')).run,
  external: async () => (await import('./external')).run,
};

async function main(): Promise<void> {
  const [name, ...args] = process.argv.slice(2);
  const load = name ? SUITES[name] : undefined;
  if (!load) {
    console.error(`usage: npm run bench -- <${Object.keys(SUITES).join('|')}> [options]`);
    process.exit(2);
  }
  useLocalHsmEnv();
  await (
    await load()
  )(args);
}

main().catch((err: Error) => {
  console.error(`bench failed: ${err.name}: ${err.message}`);
  process.exit(1);
});
