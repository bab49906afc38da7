/**
 * Cold-start cost of each Lambda: its bundle built the way the CDK construct builds it (esbuild,
 * ESM, minified, every dependency and the AWS SDK inside, Node 24), its size, and the time a
 * fresh Node process takes to import it, compared with a bundle that only imports and
 * instantiates the same AWS SDK clients. And the API's one call at cold start: the load of its
 * grants (one SSM GetParameter through a fresh client).
 */
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { type BuildOptions, build } from 'esbuild';
import { ADVANCED_PARAMETER_BYTES } from '../infra/constructs/api-grants';
import type { GrantsDocument } from '../shared/core/access';
import { listenOnLoopback } from '../test/local-aws/loopback';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** As infra/constructs/orrery-function.ts: lets CommonJS inside the ESM bundle `require` built-ins. */
const ESM_REQUIRE_BANNER =
  "import { createRequire as __orreryCreateRequire } from 'node:module'; " +
  'const require = __orreryCreateRequire(import.meta.url);';

/** As infra/constructs/orrery-function.ts: the Tracer is bundled only into a function that traces. */
const TRACER_MODULE = '@aws-lambda-powertools/tracer';

const COMMON: BuildOptions = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  minify: true,
  mainFields: ['module', 'main'],
  banner: { js: ESM_REQUIRE_BANNER },
  metafile: true,
  logLevel: 'warning',
};

const CLIENT_CLASSES: Record<string, string> = {
  dynamodb: 'DynamoDBClient',
  sqs: 'SQSClient',
  scheduler: 'SchedulerClient',
  ssm: 'SSMClient',
  s3: 'S3Client',
};

export interface BundleFigure {
  name: string;
  entry: string;
  status: 'measured' | 'not implemented yet';
  bytes?: number;
  gzipBytes?: number;
  /** AWS SDK clients found in the bundle. */
  sdkClients?: string[];
  /** Median ms to `import()` the bundle in a fresh process, and of the whole process. */
  importMs?: number;
  processMs?: number;
  /** The SDK-only bundle with the same clients. */
  baseline?: string;
  /** importMs / the baseline's importMs. */
  ratio?: number;
}

/**
 * The API's grants load at cold start (shared/api/lambda.ts): `createSsmClient()` and the first
 * `SsmGrantsSource.load()`, in a fresh process that has already imported the code, against a
 * loopback stub of SSM that answers at once. On AWS the network and SSM's own latency come on top.
 */
export interface GrantsLoadFigure {
  /** What answered the GetParameter. */
  target: string;
  /** Bytes of the grants document answered: the most one parameter holds. */
  documentBytes: number;
  /** Median ms: a fresh client and its first GetParameter, the document parsed and checked. */
  firstMs: number;
  /** Median ms of a second load with the same client: the part that is not the client's first call. */
  nextMs: number;
}

export interface ColdStartResult {
  runs: number;
  node: string;
  /** A fresh process importing an empty module: Node's own start. */
  emptyProcessMs: number;
  bundles: BundleFigure[];
  baselines: BundleFigure[];
  grantsLoad: GrantsLoadFigure;
}

interface Built {
  file: string;
  bytes: number;
  gzipBytes: number;
  sdkClients: string[];
}

async function bundle(options: BuildOptions, outfile: string): Promise<Built> {
  const result = await build({ ...COMMON, ...options, outfile });
  const inputs = Object.keys(result.metafile?.inputs ?? {});
  const sdkClients = [
    ...new Set(inputs.map((path) => /@aws-sdk\/client-([a-z0-9-]+)\//.exec(path)?.[1]).filter((c): c is string => !!c)),
  ].sort();
  const code = readFileSync(outfile);
  return { file: outfile, bytes: code.length, gzipBytes: gzipSync(code).length, sdkClients };
}

function baselineSource(clients: string[]): string {
  const classOf = (client: string) => {
    const name = CLIENT_CLASSES[client];
    if (!name)
      throw new Error(`bench/cold-start.ts: add the client class of @aws-sdk/client-${client} to CLIENT_CLASSES`);
    return name;
  };
  const lines = clients.map((c) => `import { ${classOf(c)} } from '@aws-sdk/client-${c}';`);
  lines.push(`export const clients = [${clients.map((c) => `new ${classOf(c)}({})`).join(', ')}];`);
  return lines.join('\n');
}

/** One fresh process importing `file`: ms spent in `import()` and in the whole process. */
function load(file: string | undefined): { importMs: number; processMs: number } {
  const target = file ? JSON.stringify(pathToFileURL(file).href) : "'data:text/javascript,'";
  const script = `const t=performance.now();await import(${target});process.stdout.write(JSON.stringify({importMs:performance.now()-t}));`;
  const started = performance.now();
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', AWS_REGION: 'us-east-1' },
  });
  const processMs = performance.now() - started;
  if (child.status !== 0) throw new Error(`loading ${file} failed: ${child.stderr}`);
  return { importMs: (JSON.parse(child.stdout) as { importMs: number }).importMs, processMs };
}

const GRANTS_PARAMETER = 'bench-grants';

/** A grants document as large as one parameter holds: one enqueue grant of one type per role. */
function largestGrants(): GrantsDocument {
  const principals: Record<string, GrantsDocument['principals'][string]> = {};
  for (let i = 0; ; i++) {
    const id = `arn:aws:iam::123456789012:role/bench-service-${i}`;
    principals[id] = [{ action: 'enqueue', types: [`bench-type-${i}`] }];
    if (JSON.stringify({ v: 1, principals }).length > ADVANCED_PARAMETER_BYTES) {
      delete principals[id];
      return { v: 1, principals };
    }
  }
}

/**
 * `runs` fresh processes, each importing the grants source built as the API's bundle holds it,
 * then timing a fresh SSM client's first load and a second one. SSM is a loopback HTTP server
 * in this process answering GetParameter with {@link largestGrants}: the SDK's whole path runs
 * (credentials from the environment, as on Lambda; endpoint, SigV4, the connection, the answer
 * parsed), but no network and no service time.
 */
async function measureGrantsLoad(dir: string, runs: number): Promise<GrantsLoadFigure> {
  const value = JSON.stringify(largestGrants());
  const answer = JSON.stringify({
    Parameter: { Name: GRANTS_PARAMETER, Type: 'String', Value: value, Version: 1, DataType: 'text' },
  });
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { Name?: string };
      const ok = request.headers['x-amz-target'] === 'AmazonSSM.GetParameter' && body.Name === GRANTS_PARAMETER;
      response.writeHead(ok ? 200 : 400, { 'content-type': 'application/x-amz-json-1.1' });
      response.end(ok ? answer : JSON.stringify({ __type: 'ParameterNotFound', message: 'bench stub' }));
    });
  });
  const endpoint = await listenOnLoopback(server);
  try {
    const source = {
      contents: "export * from './shared/aws/ssm-grants-source';",
      resolveDir: ROOT,
      loader: 'ts' as const,
    };
    const { file } = await bundle({ stdin: source }, join(dir, 'grants.mjs'));
    const script =
      `const { createSsmClient, SsmGrantsSource } = await import(${JSON.stringify(pathToFileURL(file).href)});` +
      'let t = performance.now(); const client = createSsmClient();' +
      `const source = new SsmGrantsSource(client, ${JSON.stringify(GRANTS_PARAMETER)});` +
      'await source.load(); const firstMs = performance.now() - t;' +
      't = performance.now(); await source.load(); const nextMs = performance.now() - t;' +
      'client.destroy(); process.stdout.write(JSON.stringify({ firstMs, nextMs }));';
    const env = {
      PATH: process.env.PATH ?? '',
      AWS_REGION: 'us-east-1',
      AWS_ENDPOINT_URL_SSM: endpoint,
      AWS_ACCESS_KEY_ID: 'AKIDBENCH',
      AWS_SECRET_ACCESS_KEY: 'bench-secret',
      AWS_SESSION_TOKEN: 'bench-session',
    };
    // Asynchronous: the stub answers from this process's event loop while the child waits.
    const once = async () => {
      const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { env });
      return JSON.parse(stdout) as { firstMs: number; nextMs: number };
    };
    await once(); // warm the file cache
    const samples = [];
    for (let run = 0; run < runs; run++) samples.push(await once());
    return {
      target: 'a loopback stub of SSM in the bench process (no network, no service time)',
      documentBytes: value.length,
      firstMs: round(median(samples.map((s) => s.firstMs))),
      nextMs: round(median(samples.map((s) => s.nextMs))),
    };
  } finally {
    await new Promise((done) => server.close(done));
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] ?? 0;
const round = (n: number) => Math.round(n * 10) / 10;

/** Builds every bundle, then loads each `runs` times, interleaved so machine noise hits all alike. */
export async function measureColdStart(runs: number): Promise<ColdStartResult> {
  const dir = mkdtempSync(join(tmpdir(), 'orrery-bench-'));
  try {
    const entries = [
      { name: 'api', entry: 'functions/api.ts' },
      { name: 'worker (echo)', entry: 'functions/jobs/echo.ts' },
      // JobPlatform `tracing: true`: the Powertools Tracer and the X-Ray SDK in the bundle (loaded only then)
      { name: 'worker (echo), tracing on', entry: 'functions/jobs/echo.ts', traced: true },
      { name: 'supervisor', entry: 'functions/supervisor.ts' },
    ];
    const bundles: (BundleFigure & { built?: Built })[] = [];
    for (const [i, { name, entry, traced }] of entries.entries()) {
      if (!existsSync(join(ROOT, entry))) {
        bundles.push({ name, entry, status: 'not implemented yet' });
        continue;
      }
      const external = traced ? [] : [TRACER_MODULE];
      const built = await bundle({ entryPoints: [join(ROOT, entry)], external }, join(dir, `fn-${i}.mjs`));
      bundles.push({ name, entry, status: 'measured', built });
    }
    const sets = new Map<string, string[]>();
    for (const b of bundles) if (b.built) sets.set(b.built.sdkClients.join('+'), b.built.sdkClients);
    const baselines: (BundleFigure & { built?: Built })[] = [];
    for (const [i, [key, clients]] of [...sets.entries()].entries()) {
      const source = { contents: baselineSource(clients), resolveDir: ROOT, loader: 'js' as const };
      const built = await bundle({ stdin: source }, join(dir, `sdk-${i}.mjs`));
      baselines.push({ name: `SDK only: ${key}`, entry: '(generated)', status: 'measured', built });
    }

    const all = [...bundles, ...baselines].filter((b) => b.built);
    const samples = new Map(all.map((b) => [b, { importMs: [] as number[], processMs: [] as number[] }]));
    const empty: number[] = [];
    load(undefined); // warm the file cache
    for (const b of all) load(b.built?.file);
    for (let run = 0; run < runs; run++) {
      empty.push(load(undefined).processMs);
      for (const b of all) {
        const sample = load(b.built?.file);
        samples.get(b)?.importMs.push(sample.importMs);
        samples.get(b)?.processMs.push(sample.processMs);
      }
    }
    const finish = (b: BundleFigure & { built?: Built }): BundleFigure => {
      const { built, ...figure } = b;
      if (!built) return figure;
      const s = samples.get(b);
      return {
        ...figure,
        bytes: built.bytes,
        gzipBytes: built.gzipBytes,
        sdkClients: built.sdkClients,
        importMs: round(median(s?.importMs ?? [])),
        processMs: round(median(s?.processMs ?? [])),
      };
    };
    const baselineFigures = baselines.map(finish);
    const bundleFigures = bundles.map((b) => {
      const figure = finish(b);
      const key = figure.sdkClients?.join('+');
      const index = baselines.findIndex((x) => x.name === `SDK only: ${key}`);
      const own = samples.get(b)?.importMs ?? [];
      const base = samples.get(baselines[index] as BundleFigure)?.importMs ?? [];
      if (own.length > 0 && own.length === base.length) {
        // Median of per-run ratios: each run loads both back to back, so machine load cancels out.
        figure.baseline = baselineFigures[index]?.name ?? '';
        figure.ratio = Math.round(median(own.map((ms, i) => ms / (base[i] ?? ms))) * 100) / 100;
      }
      return figure;
    });
    return {
      runs,
      node: process.version,
      emptyProcessMs: round(median(empty)),
      bundles: bundleFigures,
      baselines: baselineFigures,
      grantsLoad: await measureGrantsLoad(dir, runs),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
