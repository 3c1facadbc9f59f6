import { resolve } from 'node:path';

/** Repository root and the git-ignored directory that holds everything local (token, jars, keys). */
export const ROOT = resolve(__dirname, '../..');
export const LOCAL_DIR = resolve(ROOT, '.local');
