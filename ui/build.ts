/**
 * `npm run build:ui`: bundles the dashboard (`ui/src`, Preact) with esbuild into `ui/dist/`:
 * `index.html` and `assets/app-<hash>.js|css`, minified, with content-hashed names so the
 * server can cache them for good. `npm run dev` and the package build call {@link buildUi}.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

export const UI_DIR = dirname(fileURLToPath(import.meta.url));
/** Where `npm run build:ui` writes (the dashboard server's default, beside the sources). */
export const UI_DIST = join(UI_DIR, 'dist');

/** Builds the UI into `outDir` (emptied first); returns the files written, relative to it. */
export function buildUi(outDir: string = UI_DIST): { files: string[]; bytes: number } {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(join(outDir, 'assets'), { recursive: true });
  const result = buildSync({
    absWorkingDir: UI_DIR,
    entryPoints: { app: 'src/main.tsx' },
    bundle: true,
    format: 'esm',
    target: ['chrome111', 'firefox111', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    sourcemap: false,
    legalComments: 'none',
    entryNames: 'assets/[name]-[hash]',
    outdir: outDir,
    metafile: true,
    logLevel: 'warning',
  });
  const outputs = Object.keys(result.metafile?.outputs ?? {}).map((file) => relative(outDir, resolve(UI_DIR, file)));
  const script = outputs.find((file) => file.endsWith('.js'));
  const style = outputs.find((file) => file.endsWith('.css'));
  if (!script || !style) throw new Error(`esbuild wrote no script or stylesheet: ${outputs.join(', ')}`);
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light">
<title>Orrery</title>
<link rel="stylesheet" href="${style}">
<script type="module" src="${script}"></script>
</head>
<body>
<div id="app"><noscript>The Orrery dashboard needs JavaScript.</noscript></div>
</body>
</html>
`;
  writeFileSync(join(outDir, 'index.html'), html);
  const bytes = Object.values(result.metafile?.outputs ?? {}).reduce((n, o) => n + o.bytes, 0) + html.length;
  return { files: ['index.html', ...outputs], bytes };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outDir = resolve(process.argv[2] ?? UI_DIST);
  const started = Date.now();
  const { files, bytes } = buildUi(outDir);
  console.log(
    `${relative(process.cwd(), outDir) || basename(outDir)}: ${files.join(', ')} (${(bytes / 1024).toFixed(1)} KiB) in ${Date.now() - started} ms`,
  );
}
