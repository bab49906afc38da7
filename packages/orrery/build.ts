/**
 * `npm run build:package`: compiles the package's entry points and every source file they
 * import (tsc, from `packages/orrery/tsconfig.json`) into `packages/orrery/dist/`, JavaScript
 * (ESM) beside its `.d.ts`, mirroring the repository layout (`dist/infra/…`, `dist/shared/…`).
 *
 * The sources import each other without file extensions (`moduleResolution: bundler`), which
 * Node's ESM loader and TypeScript's `nodenext` resolution refuse, so every relative specifier
 * in the output is then rewritten to the file tsc emitted for it (`./x` → `./x.js` or
 * `./x/index.js`). A specifier that matches no emitted file fails the build.
 *
 * The dashboard's web UI is built into `dist/ui/dist/` (prebuilt, so nothing is built at run
 * time), where the compiled `dist/shared/dashboard/server.js` looks for it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { buildUi } from '../../ui/build';

export const PACKAGE_DIR = dirname(fileURLToPath(import.meta.url));
export const DIST_DIR = join(PACKAGE_DIR, 'dist');
const ROOT = resolve(PACKAGE_DIR, '..', '..');

/** Emitted files under `dir`, recursively. */
export function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

/**
 * The specifier Node and `nodenext` accept for `specifier` imported from `file`: the emitted
 * `.js` (for a `.d.ts`, the `.js` its declarations stand for). Throws when there is none.
 */
export function fullSpecifier(file: string, specifier: string): string {
  if (/\.(m?js|json)$/.test(specifier)) return specifier;
  const from = dirname(file);
  const declarations = file.endsWith('.d.ts');
  const candidates = [`${specifier}.js`, `${specifier}/index.js`];
  for (const candidate of candidates) {
    const target = resolve(from, declarations ? candidate.replace(/\.js$/, '.d.ts') : candidate);
    if (existsSync(target)) return candidate;
  }
  throw new Error(`${relative(ROOT, file)}: no emitted file for import '${specifier}'`);
}

/**
 * Rewrites every relative specifier of the emitted `.js` and `.d.ts` files (imports, re-exports,
 * `import()` calls and types, found by TypeScript's own scanner, so examples in comments are left
 * alone); returns how many.
 */
export function addExtensions(dir: string): number {
  let count = 0;
  for (const file of filesUnder(dir)) {
    if (!file.endsWith('.js') && !file.endsWith('.d.ts')) continue;
    const text = readFileSync(file, 'utf8');
    const relativeImports = ts
      .preProcessFile(text, true, true)
      .importedFiles.filter((imported) => /^\.\.?\//.test(imported.fileName))
      .sort((a, b) => b.pos - a.pos); // from the end, so earlier positions stay valid
    let rewritten = text;
    for (const { fileName, pos } of relativeImports) {
      // `pos` is where the string literal starts: at its quote
      const start = /['"]/.test(text.charAt(pos)) ? pos + 1 : pos;
      if (text.slice(start, start + fileName.length) !== fileName) {
        throw new Error(`${relative(ROOT, file)}: import '${fileName}' not found at offset ${pos}`);
      }
      const end = start + fileName.length;
      rewritten = rewritten.slice(0, start) + fullSpecifier(file, fileName) + rewritten.slice(end);
      count++;
    }
    if (rewritten !== text) writeFileSync(file, rewritten);
  }
  return count;
}

/** Cleans `dist/`, compiles, and completes the specifiers. */
export function buildPackage(): { files: number; specifiers: number } {
  rmSync(DIST_DIR, { recursive: true, force: true });
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', join(PACKAGE_DIR, 'tsconfig.json')], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (result.status !== 0) throw new Error(`tsc failed (exit ${result.status ?? result.signal})`);
  const specifiers = addExtensions(DIST_DIR);
  buildUi(join(DIST_DIR, 'ui', 'dist'));
  return { files: filesUnder(DIST_DIR).length, specifiers };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { files, specifiers } = buildPackage();
  console.log(`${relative(process.cwd(), DIST_DIR)}: ${files} files, ${specifiers} relative imports completed`);
}
