import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Root of the tree this module was loaded from: the repository root when it runs from the
 * TypeScript sources, or `dist/` of the installed `orrery-jobs` package (where the build puts
 * `infra/paths.js`).
 */
export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** True when running from the repository's TypeScript sources, false from the built package. */
export const FROM_SOURCES = import.meta.url.endsWith('.ts');

/** The lock file NodejsFunction uses to find the project's dependencies (from the sources only). */
export const LOCK_FILE = join(REPO_ROOT, 'package-lock.json');

/**
 * Resolves a handler file given to the constructs. From the sources: against the repository
 * root. From the package: against the working directory (the CDK app's, where `cdk.json` is),
 * as NodejsFunction itself does.
 */
export function fromRepoRoot(path: string): string {
  if (isAbsolute(path)) return path;
  return FROM_SOURCES ? resolve(REPO_ROOT, path) : resolve(path);
}

/**
 * A Lambda entry that ships with Orrery (`functions/<name>.ts` in the repository,
 * `dist/functions/<name>.js` in the package), as an absolute path.
 */
export function platformEntry(name: 'supervisor' | 'api'): string {
  return join(REPO_ROOT, 'functions', `${name}.${FROM_SOURCES ? 'ts' : 'js'}`);
}

/**
 * `projectRoot` and `depsLockFilePath` for NodejsFunction. From the sources: the repository's.
 * From the package: none, so NodejsFunction looks for the app's lock file from the working
 * directory upwards and bundles from that project (the package is installed under it).
 */
export function bundlingProject(): { projectRoot?: string; depsLockFilePath?: string } {
  return FROM_SOURCES ? { projectRoot: REPO_ROOT, depsLockFilePath: LOCK_FILE } : {};
}
