/**
 * npm run docs:tables: rewrites the generated regions of docs/*.md from the code (scripts/docs/tables.ts).
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { regionsOf, rendered } from './docs/tables';

function main(): void {
  const dir = join(__dirname, '..', 'docs');
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.md'))) {
    const path = join(dir, name);
    const page = readFileSync(path, 'utf8');
    if (regionsOf(page).length === 0) continue;
    const next = rendered(page, path);
    if (next !== page) writeFileSync(path, next);
    console.log(`docs/${name}: ${regionsOf(page).join(', ')}${next === page ? '' : ' (rewritten)'}`);
  }
}

main();
