import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Absolute path of the repository root (the directory holding `package-lock.json`). */
export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Resolves `path` against the repository root unless it is absolute already. */
export function fromRepoRoot(path: string): string {
  return isAbsolute(path) ? path : resolve(REPO_ROOT, path);
}

/** The lock file NodejsFunction uses to find the project's dependencies. */
export const LOCK_FILE = join(REPO_ROOT, 'package-lock.json');
