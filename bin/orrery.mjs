#!/usr/bin/env node
// Launcher of the `orrery` CLI (package.json "bin").
//
// Runs dist/orrery.mjs, the bundle `npm run build:cli` writes, when it is newer than every
// source file it was built from (listed in dist/orrery.meta.json). Otherwise (a fresh clone
// right after `npm ci`, or sources edited since the build) it runs shared/cli/main.ts through
// tsx, a devDependency. ORRERY_CLI_SOURCE=1 forces the sources. `orrery --version` tells which ran.
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bundle = join(root, 'dist', 'orrery.mjs');

function mtime(file) {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

function bundleIsFresh() {
  const built = mtime(bundle);
  if (built === undefined) return false;
  let inputs;
  try {
    ({ inputs } = JSON.parse(readFileSync(join(root, 'dist', 'orrery.meta.json'), 'utf8')));
  } catch {
    return true; // a bundle without its metadata (e.g. copied elsewhere): trust it
  }
  return inputs.every((file) => {
    const changed = mtime(join(root, file));
    return changed !== undefined && changed <= built;
  });
}

let cli;
let runtime;
if (!process.env.ORRERY_CLI_SOURCE && bundleIsFresh()) {
  cli = await import(pathToFileURL(bundle).href);
  runtime = 'bundle';
} else {
  let tsImport;
  try {
    ({ tsImport } = await import('tsx/esm/api'));
  } catch {
    if (mtime(bundle) === undefined) {
      console.error('orrery: no built CLI (run `npm run build:cli`) and no tsx to run the sources (run `npm ci`)');
      process.exit(2);
    }
  }
  if (tsImport) {
    cli = await tsImport('../shared/cli/main.ts', import.meta.url);
    runtime = 'source';
  } else {
    cli = await import(pathToFileURL(bundle).href);
    runtime = 'bundle, older than the sources';
  }
}
await cli.runCli(process.argv.slice(2), runtime);
