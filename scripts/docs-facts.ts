/**
 * npm run docs:facts -- <git ref>: the facts of docs/*.md at <ref> that the current docs and READMEs no
 * longer state. A fact is a backticked span, an UPPER_SNAKE name, an `npm run` command or a number with a
 * unit; each one missing is printed with the page it came from, for review by hand when pages are
 * rewritten (a fact may be dropped on purpose: a dated measurement, a work log).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..');

const PATTERNS: readonly RegExp[] = [
  /`([^`\n]+)`/g,
  /\b([A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9])\b/g,
  /(npm run [\w:-]+(?: --)?(?: [\w.-]+)?)/g,
  /\b(\d[\d,.]*\s?(?:ms|s|KB|MB|GB|%|minutes?|hours?|days?|bytes?|\/s))(?![\w/])/g,
];

/** The facts of a text, normalised so that spacing and case do not count. */
function factsOf(text: string): Set<string> {
  const out = new Set<string>();
  for (const pattern of PATTERNS) {
    for (const match of text.matchAll(pattern)) out.add(match[1].trim().replace(/\s+/g, ' '));
  }
  return out;
}

const normal = (fact: string): string => fact.toLowerCase().replace(/\s+/g, '');

/** Every README.md of the repository outside node_modules and .local, and docs/*.md, as one text. */
function currentText(): string {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (['node_modules', '.local', '.git', 'cdk.out'].includes(entry.name)) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name === 'README.md' || (dir.endsWith('/docs') && entry.name.endsWith('.md')))
        files.push(path);
    }
  };
  walk(ROOT);
  return files.map((f) => readFileSync(f, 'utf8')).join('\n');
}

function main(ref: string): void {
  const pages = execFileSync('git', ['ls-tree', '--name-only', ref, 'docs/'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((p) => p.endsWith('.md'));
  const now = normal(currentText());
  let missing = 0;
  for (const page of pages) {
    const old = execFileSync('git', ['show', `${ref}:${page}`], { cwd: ROOT, encoding: 'utf8' });
    const lost = [...factsOf(old)].filter((fact) => !now.includes(normal(fact)));
    missing += lost.length;
    for (const fact of lost) console.log(`${page}\t${fact}`);
  }
  console.error(`${missing} facts of ${ref}'s docs not found in the current docs and READMEs`);
}

if (require.main === module) main(process.argv[2] ?? 'HEAD');
