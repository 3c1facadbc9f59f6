/**
 * Every relative link of docs/*.md and the READMEs resolves: the file exists and, for a markdown page, the
 * anchor is one of its headings (GitHub's slugs). A page renamed or a heading reworded without its links
 * fails here, naming the link.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

const ROOT = join(__dirname, '../../..');
const SKIP = new Set(['node_modules', '.local', '.git', 'cdk.out']);

function markdownFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...markdownFiles(path));
    else if (entry.name === 'README.md' || (dir === join(ROOT, 'docs') && entry.name.endsWith('.md')))
      out.push(path);
  }
  return out;
}

const withoutCode = (text: string): string => text.replace(/```[\s\S]*?```/g, '');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchorsOf(path: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of withoutCode(readFileSync(path, 'utf8')).matchAll(/^#+ (.*)$/gm)) {
    const slug = heading
      .replace(/`/g, '')
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}_\- ]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** The broken relative links of one file, as `file: link` lines. */
function brokenLinks(file: string): string[] {
  const broken: string[] = [];
  for (const [, target] of withoutCode(readFileSync(file, 'utf8')).matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^(https?|mailto):/.test(target)) continue;
    const [path, anchor] = target.split('#');
    const resolved = path ? normalize(join(dirname(file), path)) : file;
    const ok =
      existsSync(resolved) && (!anchor || !resolved.endsWith('.md') || anchorsOf(resolved).has(anchor));
    if (!ok) broken.push(`${relative(ROOT, file)}: ${target}`);
  }
  return broken;
}

const files = markdownFiles(ROOT);

test('the docs and READMEs are found', () => {
  expect(files.map((f) => relative(ROOT, f))).toEqual(expect.arrayContaining(['README.md', 'docs/api.md']));
});

test('every relative link of the docs and READMEs resolves, anchors included', () => {
  expect(files.flatMap(brokenLinks)).toEqual([]);
});

test('a link to a missing heading is reported', () => {
  const anchors = anchorsOf(join(ROOT, 'docs/api.md'));
  expect(anchors.has('errors-of-the-http-calls')).toBe(true);
  expect(anchors.has('no-such-heading')).toBe(false);
});
