/**
 * A token directory left with an empty token.object (a process killed during SoftHSM's login rewrite)
 * is moved aside by name, so the set-up can create a fresh token; intact tokens stay where they are.
 */
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { moveAsideTruncatedTokens } from '../setup-token';

test('only truncated token directories are moved aside', () => {
  const dir = mkdtempSync(join(tmpdir(), 'softhsm-'));
  const tokenDir = join(dir, 'tokens');
  const token = (name: string, bytes: number): void => {
    mkdirSync(join(tokenDir, name), { recursive: true });
    writeFileSync(join(tokenDir, name, 'token.object'), Buffer.alloc(bytes, 1));
  };
  token('intact', 320);
  token('truncated', 0);
  mkdirSync(join(tokenDir, 'no-token-file'));

  const moved = moveAsideTruncatedTokens({ dir, tokenDir });
  expect(moved).toHaveLength(1);
  expect(moved[0]).toMatch(/broken-truncated-\d+$/);
  expect(readdirSync(tokenDir).sort()).toEqual(['intact', 'no-token-file']);
  expect(readdirSync(moved[0])).toEqual(['token.object']);
  expect(moveAsideTruncatedTokens({ dir, tokenDir })).toEqual([]);
});
