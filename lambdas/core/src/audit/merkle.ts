/**
 * Merkle trees over an audit entry's events, hashed as in RFC 9162 (Certificate Transparency 2.0, 2.1):
 *
 *   leaf hash  = SHA-256(0x00 || event text)
 *   node hash  = SHA-256(0x01 || left || right), the left subtree holding the largest power of two < n
 *
 * An inclusion path proves that one event is in an entry without the other events: the verifier needs
 * the event, its index, the tree size and the path, and gets the root the entry hash covers.
 */
import { createHash } from 'node:crypto';
import type { Sha256Hex } from './types';

function sha256(...parts: Buffer[]): Buffer {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
}

export function leafHash(eventText: string): Buffer {
  return sha256(Buffer.from([0]), Buffer.from(eventText, 'utf8'));
}

function nodeHash(left: Buffer, right: Buffer): Buffer {
  return sha256(Buffer.from([1]), left, right);
}

/** Largest power of two strictly below n (n >= 2). */
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function rootOfLeaves(leaves: readonly Buffer[]): Buffer {
  if (leaves.length === 0) return sha256();
  if (leaves.length === 1) return leaves[0];
  const k = split(leaves.length);
  return nodeHash(rootOfLeaves(leaves.slice(0, k)), rootOfLeaves(leaves.slice(k)));
}

/** MTH(D[n]) of the events' texts, hex. */
export function merkleRoot(eventTexts: readonly string[]): Sha256Hex {
  return rootOfLeaves(eventTexts.map(leafHash)).toString('hex');
}

/**
 * The root of leaves[lo, hi), appending to each of its leaves' paths the sibling it meets at every
 * level: every leaf's path at once, each subtree root hashed once (O(n) hashes for n paths, where one
 * path at a time costs O(n) each).
 */
function rootAndPaths(leaves: readonly Buffer[], lo: number, hi: number, paths: Buffer[][]): Buffer {
  if (hi - lo === 1) return leaves[lo];
  const mid = lo + split(hi - lo);
  const left = rootAndPaths(leaves, lo, mid, paths);
  const right = rootAndPaths(leaves, mid, hi, paths);
  for (let i = lo; i < mid; i++) paths[i].push(right);
  for (let i = mid; i < hi; i++) paths[i].push(left);
  return nodeHash(left, right);
}

/** PATH(m, D[n]) of every event m (hex hashes, leaf level first), in event order. */
export function inclusionPaths(eventTexts: readonly string[]): Sha256Hex[][] {
  if (eventTexts.length === 0) return [];
  const paths: Buffer[][] = eventTexts.map(() => []);
  rootAndPaths(eventTexts.map(leafHash), 0, eventTexts.length, paths);
  return paths.map((path) => path.map((h) => h.toString('hex')));
}

/**
 * The root an inclusion path leads to (RFC 9162 2.1.3.2), or undefined when the path cannot belong to a
 * tree of this size (wrong length, index out of range, malformed hashes).
 */
export function rootFromInclusionPath(
  eventText: string,
  index: number,
  treeSize: number,
  path: readonly string[],
): Sha256Hex | undefined {
  if (!Number.isInteger(index) || !Number.isInteger(treeSize) || index < 0 || index >= treeSize) {
    return undefined;
  }
  if (!path.every((h) => /^[0-9a-f]{64}$/.test(h))) return undefined;
  let fn = index;
  let sn = treeSize - 1;
  let r = leafHash(eventText);
  for (const hex of path) {
    const p = Buffer.from(hex, 'hex');
    if (sn === 0) return undefined;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r.toString('hex') : undefined;
}
