/**
 * The audit log's Merkle trees against the RFC 6962 / RFC 9162 test vectors of Certificate Transparency
 * (the leaves and roots of its reference implementation's tests), and inclusion paths for every leaf of
 * every tree size up to 20, checked with the RFC 9162 verification algorithm; all paths of a tree made at
 * once equal RFC 9162's PATH(m, D[n]) made one leaf at a time, for every tree size up to 70.
 */
import { createHash } from 'node:crypto';
import { inclusionPaths, merkleRoot, rootFromInclusionPath } from '../src/audit';

/** RFC 9162 2.1.3.1 as written, one leaf at a time: the reference the one-pass paths must equal. */
function referencePath(texts: readonly string[], m: number): string[] {
  const hash = (...parts: Buffer[]): Buffer =>
    parts.reduce((h, p) => h.update(p), createHash('sha256')).digest();
  const mth = (d: readonly string[]): Buffer => {
    if (d.length === 1) return hash(Buffer.from([0]), Buffer.from(d[0]));
    let k = 1;
    while (k * 2 < d.length) k *= 2;
    return hash(Buffer.from([1]), mth(d.slice(0, k)), mth(d.slice(k)));
  };
  if (texts.length <= 1) return [];
  let k = 1;
  while (k * 2 < texts.length) k *= 2;
  return m < k
    ? [...referencePath(texts.slice(0, k), m), mth(texts.slice(k)).toString('hex')]
    : [...referencePath(texts.slice(k), m - k), mth(texts.slice(0, k)).toString('hex')];
}

const LEAVES = [
  '',
  '\x00',
  '\x10',
  '\x20\x21',
  '\x30\x31',
  '\x40\x41\x42\x43',
  '\x50\x51\x52\x53\x54\x55\x56\x57',
  '\x60\x61\x62\x63\x64\x65\x66\x67\x68\x69\x6a\x6b\x6c\x6d\x6e\x6f',
];
const ROOTS = [
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];

describe('Merkle tree hashing (RFC 9162)', () => {
  it('gives the reference roots for trees of 1 to 8 leaves', () => {
    expect(ROOTS.map((_, n) => merkleRoot(LEAVES.slice(0, n + 1)))).toEqual(ROOTS);
  });

  it('hashes the empty tree as SHA-256 of nothing', () => {
    expect(merkleRoot([])).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('proves every leaf of every tree up to 20 leaves, and nothing else', () => {
    for (let size = 1; size <= 20; size++) {
      const leaves = Array.from({ length: size }, (_, i) => `event-${i}`);
      const root = merkleRoot(leaves);
      const paths = inclusionPaths(leaves);
      expect(paths).toHaveLength(size);
      for (let i = 0; i < size; i++) {
        const path = paths[i];
        expect(path.length).toBeLessThanOrEqual(Math.ceil(Math.log2(size)));
        expect(rootFromInclusionPath(leaves[i], i, size, path)).toBe(root);
        // Wrong leaf, wrong index, a flipped path hash: another root or none. (A path can fit two tree
        // sizes, e.g. leaf 0 of 3 and of 4 leaves: the entry hash binds the size.)
        expect(rootFromInclusionPath(`${leaves[i]}!`, i, size, path)).not.toBe(root);
        if (size > 1) expect(rootFromInclusionPath(leaves[i], (i + 1) % size, size, path)).not.toBe(root);
        if (path.length > 0) {
          const bad = [...path];
          bad[0] = (bad[0][0] === '0' ? '1' : '0') + bad[0].slice(1);
          expect(rootFromInclusionPath(leaves[i], i, size, bad)).not.toBe(root);
        }
      }
    }
  });

  it('makes every path of a tree in one pass exactly as RFC 9162 makes each one (sizes 0 to 70)', () => {
    expect(inclusionPaths([])).toEqual([]);
    for (let size = 1; size <= 70; size++) {
      const leaves = Array.from({ length: size }, (_, i) => `{"event":${i}}`);
      expect(inclusionPaths(leaves)).toEqual(leaves.map((_, m) => referencePath(leaves, m)));
    }
  });

  it('refuses indexes outside the tree and malformed hashes in a path', () => {
    expect(rootFromInclusionPath('a', 2, 2, ['00'.repeat(32)])).toBeUndefined();
    expect(rootFromInclusionPath('a', 0, 2, ['zz'])).toBeUndefined();
  });
});
