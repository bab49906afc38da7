import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { deflateRawSync } from 'node:zlib';
import { App, Stack } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalog, echoJob } from '../../functions/jobs/catalog';
import { JobPlatform } from '../../infra/constructs/job-platform';
import { OrreryStack } from '../../infra/stack';
import { flatTemplate, resources } from './support';

/**
 * The one infra test that really bundles: every function's entry through the local esbuild.
 * `CDK_DOCKER` points at a binary that does not exist, so any fallback to Docker fails the test.
 */
describe('bundling with local esbuild', () => {
  const previousDocker = process.env.CDK_DOCKER;
  let outdir = '';
  let bundles: { id: string; dir: string }[] = [];

  beforeAll(() => {
    process.env.CDK_DOCKER = '/nonexistent/docker-must-not-be-used';
    outdir = mkdtempSync(join(tmpdir(), 'orrery-bundle-'));
    // Asset metadata (as the CDK CLI enables it) names each function's bundle directory.
    const app = new App({ outdir, context: { 'aws:cdk:enable-asset-metadata': true } });
    const stack = new OrreryStack(app, 'Orrery');
    app.synth();
    const functions = resources(flatTemplate(stack), 'AWS::Lambda::Function');
    bundles = Object.entries(functions).map(([id, fn]) => {
      const metadata = (fn as { Metadata?: Record<string, string> }).Metadata ?? {};
      const assetPath = metadata['aws:asset:path'];
      if (!assetPath) throw new Error(`${id} has no asset`);
      return { id, dir: join(outdir, assetPath) };
    });
    // one esbuild run per function (the API, the supervisor, a worker per example type: 18), on a
    // machine that may be running other suites: beyond the project's 120 s hook timeout
  }, 300_000);

  afterAll(() => {
    if (outdir) rmSync(outdir, { recursive: true, force: true });
    if (previousDocker === undefined) delete process.env.CDK_DOCKER;
    else process.env.CDK_DOCKER = previousDocker;
  });

  it('produces one ESM bundle with a source map per function', () => {
    expect(bundles).toHaveLength(2 + catalog.length); // the API, the supervisor and a worker per example type
    for (const { id, dir } of bundles) {
      expect(existsSync(join(dir, 'index.mjs')), id).toBe(true);
      expect(existsSync(join(dir, 'index.mjs.map')), id).toBe(true);
    }
  });

  it("fits Lambda's deployment package limits: 250 MB unzipped, 50 MB zipped", () => {
    for (const { id, dir } of bundles) {
      const files = readdirSync(dir).map((name) => join(dir, name));
      const unzipped = files.reduce((sum, file) => sum + statSync(file).size, 0);
      // deflate as a zip would (an upper bound of the zip: its headers are a few bytes a file)
      const zipped = files.reduce((sum, file) => sum + deflateRawSync(readFileSync(file)).length + 100, 0);
      expect(unzipped, `${id} unzipped bytes`).toBeLessThan(250 * 1024 * 1024);
      expect(zipped, `${id} zipped bytes`).toBeLessThan(50 * 1024 * 1024);
      // far under both: a bundle is a few MB at most (see docs/observability.md, cold start)
      expect(unzipped, `${id} unzipped bytes`).toBeLessThan(10 * 1024 * 1024);
    }
  });

  it('is minified, carries the createRequire banner and bundles our own AWS SDK', () => {
    for (const { id, dir } of bundles) {
      const code = readFileSync(join(dir, 'index.mjs'), 'utf8');
      expect(code.startsWith("import { createRequire as __orreryCreateRequire } from 'node:module';"), id).toBe(true);
      // Nothing is left for the runtime to resolve except Node built-ins.
      // (a module specifier: no spaces, parentheses or commas, which minified code next to a
      // `from` property can produce)
      const bareImports = [...code.matchAll(/\bfrom\s*["']([@\w./-][^"'\s(),]*)["']/g)].map((m) => m[1]);
      expect(
        bareImports.filter((name) => !name?.startsWith('node:') && !/^[a-z_]+$/.test(name ?? '')),
        id,
      ).toEqual([]);
      // Minified: long lines (only template literals and legal comments keep their newlines).
      expect(code.length / code.split('\n').length, `${id} chars per line`).toBeGreaterThan(2000);
      expect(statSync(join(dir, 'index.mjs')).size, `${id} bytes`).toBeLessThan(5 * 1024 * 1024);
    }
  });

  it('leaves the Powertools Tracer and the X-Ray SDK out unless tracing is on: only its dynamic import remains', () => {
    for (const { id, dir } of bundles) {
      const code = readFileSync(join(dir, 'index.mjs'), 'utf8');
      expect(code, id).toContain('import("@aws-lambda-powertools/tracer")');
      expect(code, id).not.toContain('XRaySDKInstrumentation');
    }
    const app = new App({ outdir: join(outdir, 'traced'), context: { 'aws:cdk:enable-asset-metadata': true } });
    const traced = new Stack(app, 'Traced');
    new JobPlatform(traced, 'Platform', { tracing: true, outputs: false }).addJobType({
      spec: echoJob,
      entry: 'functions/jobs/echo.ts',
    });
    app.synth();
    const functions = resources(flatTemplate(traced), 'AWS::Lambda::Function');
    expect(Object.keys(functions)).toHaveLength(3);
    for (const [id, fn] of Object.entries(functions)) {
      const assetPath = (fn as { Metadata?: Record<string, string> }).Metadata?.['aws:asset:path'] ?? '';
      const code = readFileSync(join(outdir, 'traced', assetPath, 'index.mjs'), 'utf8');
      expect(code, id).toContain('XRaySDKInstrumentation');
      expect(code, id).not.toContain('import("@aws-lambda-powertools/tracer")');
    }
  });

  it('loads in this Node and exports a handler function', async () => {
    const env = {
      AWS_REGION: 'us-east-1',
      ORRERY_TABLE: 'jobs',
      ORRERY_QUEUE_URL_BASE: 'https://sqs.us-east-1.amazonaws.com/123456789012/',
      ORRERY_QUEUE_ARN_BASE: 'arn:aws:sqs:us-east-1:123456789012:',
      ORRERY_QUEUE_PREFIX: 'Orrery',
      ORRERY_SCHEDULE_GROUP: 'g',
      ORRERY_SCHEDULER_ROLE_ARN: 'arn:aws:iam::1:role/r',
    };
    const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
    Object.assign(process.env, env);
    try {
      for (const { id, dir } of bundles) {
        const module = (await import(pathToFileURL(join(dir, 'index.mjs')).href)) as { handler?: unknown };
        expect(typeof module.handler, id).toBe('function');
      }
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});
