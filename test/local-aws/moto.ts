/**
 * The second AWS target of the local harness: moto server (`ORRERY_AWS=moto`).
 *
 * moto is an independent emulator of DynamoDB, SQS and EventBridge Scheduler in one Python
 * process (one endpoint for all three; account 123456789012). Production code reaches it only
 * through `AWS_ENDPOINT_URL_*`, as it reaches our own emulators. Its Scheduler stores schedules
 * but never fires them (as LocalStack's), so on this target delayed and recurring work runs
 * through the supervisor alone, and there is no Scheduler stand-in to drive. Its DynamoDB is
 * several times slower than DynamoDB Local, so the lease length follows its measured write
 * latency ({@link leaseMsForWriteLatency}).
 *
 * moto's DynamoDB does not serialise concurrent writes to one item: of two concurrent
 * conditional updates with the same condition, both succeeded in 10 of 200 rounds (measured,
 * moto 5.2.1), where DynamoDB accepts exactly one. Orrery's claim and fencing rest on that
 * atomicity, so the harness sends DynamoDB requests to moto one at a time through a loopback
 * proxy ({@link startSerialProxy}); SQS and Scheduler go to moto directly.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { delimiter, join } from 'node:path';
import {
  CreateTableCommand,
  DeleteTableCommand,
  DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { DEFAULT_LEASE_MS } from '../../shared/core/lease';
import { JOB_TABLE, SINGLE_SK } from '../../shared/core/table';
import { LOCAL_CREDENTIALS } from './clients';
import { createTableInput } from './deploy';
import { listenOnLoopback } from './loopback';
import { trackChild, untrackChild } from './process-guard';

/** Which AWS implementation the harness runs against. */
export type AwsTargetKind = 'local' | 'moto';

/** The environment variable that switches the harness: `ORRERY_AWS=moto`. Unset or `local`: our emulators. */
export const AWS_TARGET_ENV = 'ORRERY_AWS';

/** The target named by `ORRERY_AWS` (unset: `local`); any other value is an error, not a silent fallback. */
export function awsTargetFromEnv(env: NodeJS.ProcessEnv = process.env): AwsTargetKind {
  const value = env[AWS_TARGET_ENV];
  if (value === undefined || value === '' || value === 'local') return 'local';
  if (value === 'moto') return 'moto';
  throw new Error(`${AWS_TARGET_ENV}=${value} is not a known target (use "local" or "moto")`);
}

/** How to install moto's server, for error messages (here and in .ci/run). */
export const MOTO_INSTALL_HINT =
  "moto_server was not found on PATH. Install it with `pip install 'moto[server]'` (moto 5.2.1 is the measured " +
  'version), or set ORRERY_MOTO_SERVER to its path.';

/** The `moto_server` executable: `ORRERY_MOTO_SERVER`, else the first on PATH; undefined if there is none. */
export function findMotoServer(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const explicit = env.ORRERY_MOTO_SERVER;
  const candidates = explicit
    ? [explicit]
    : (env.PATH ?? '')
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(dir, 'moto_server'));
  return candidates.find((candidate) => {
    try {
      accessSync(candidate, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** A running moto server (our own child process). */
export interface MotoServer {
  /** `http://127.0.0.1:PORT`: the endpoint of DynamoDB, SQS and Scheduler alike. */
  readonly endpoint: string;
  readonly port: number;
  readonly pid: number;
  /** Milliseconds from spawn to the first answer. */
  readonly startupMs: number;
  /** Kills it (SIGTERM, SIGKILL after 3 s) and resolves once it has exited. */
  stop(): Promise<void>;
}

/**
 * Starts `moto_server -H 127.0.0.1 -p 0` (the OS picks a free loopback port; moto prints it),
 * and waits for its first HTTP answer. It never outlives this process: it runs under
 * `setpriv --pdeathsig KILL` on Linux, and process-guard kills it on exit and on signals.
 *
 * @throws with {@link MOTO_INSTALL_HINT} if moto_server is missing; with its output if it
 *   exits early or does not start within `startTimeoutMs`.
 *
 * @example
 * const moto = await startMotoServer();
 * process.env.AWS_ENDPOINT_URL_SQS = moto.endpoint;
 * await moto.stop();
 */
export async function startMotoServer(options: { startTimeoutMs?: number } = {}): Promise<MotoServer> {
  const command = findMotoServer();
  if (!command) throw new Error(MOTO_INSTALL_HINT);
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const [file, argv] = withParentDeathSignal(command, ['-H', '127.0.0.1', '-p', '0']);
  const started = performance.now();
  const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  trackChild(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no "Running on" line within ${timeoutMs} ms`)), timeoutMs);
      const onData = (chunk: Buffer) => {
        output = (output + chunk.toString('utf8')).slice(-8_000);
        const match = /Running on http:\/\/127\.0\.0\.1:(\d+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(new Error(`could not spawn ${command}: ${error.message}. ${MOTO_INSTALL_HINT}`));
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`moto_server exited early (code ${code}, signal ${signal})`));
      });
    });
    const endpoint = `http://127.0.0.1:${port}`;
    await waitForAnswer(endpoint, timeoutMs);
    // Keep draining its request log, or a full pipe would block the server.
    child.stdout?.resume();
    child.stderr?.resume();
    if (child.pid === undefined) throw new Error('moto_server has no pid');
    return {
      endpoint,
      port,
      pid: child.pid,
      startupMs: Math.round(performance.now() - started),
      stop: () => killAndWait(child, exited),
    };
  } catch (error) {
    await killAndWait(child, exited);
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`moto_server did not start: ${reason}\n--- its output ---\n${output.trim()}`);
  }
}

async function waitForAnswer(endpoint: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await fetch(`${endpoint}/moto-api/`, { signal: AbortSignal.timeout(2_000) });
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

async function killAndWait(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
    await exited;
    clearTimeout(timer);
  }
  untrackChild(child);
}

/** On Linux, `setpriv --pdeathsig KILL` (it execs, so the pid stays moto's). */
function withParentDeathSignal(command: string, args: string[]): [string, string[]] {
  const setpriv =
    process.platform === 'linux' ? ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p)) : undefined;
  return setpriv ? [setpriv, ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, args];
}

/** Latency of conditional writes, in ms. */
export interface WriteLatency {
  samples: number;
  p50: number;
  p99: number;
  max: number;
}

/**
 * Measures the latency of conditional writes shaped like the worker's (a conditional put, then
 * heartbeat-like conditional updates that move a due-index key) on a scratch table with the job
 * table's definition (same GSIs), then deletes the table.
 *
 * @example
 * const latency = await measureWriteLatency(moto.endpoint, 'us-east-1'); // { p50: 9, p99: 41, ... }
 */
export async function measureWriteLatency(
  endpoint: string,
  region: string,
  samples = 40,
  /** Prepares the client before the writes, e.g. installs a run's fault injection. */
  prepare?: (dynamo: DynamoDBClient) => void,
): Promise<WriteLatency> {
  const dynamo = new DynamoDBClient({ endpoint, region, credentials: LOCAL_CREDENTIALS });
  prepare?.(dynamo);
  const table = `latency-probe-${process.pid}-${Date.now().toString(36)}`;
  const times: number[] = [];
  try {
    await dynamo.send(new CreateTableCommand(createTableInput(table, JOB_TABLE)));
    const pk = { S: 'job#probe' };
    const sk = { S: SINGLE_SK };
    const timed = async (write: () => Promise<unknown>) => {
      const start = performance.now();
      await write();
      times.push(performance.now() - start);
    };
    await timed(() =>
      dynamo.send(
        new PutItemCommand({
          TableName: table,
          Item: {
            pk,
            sk,
            token: { N: '0' },
            gsi1pk: { S: 'probe#0' },
            gsi1sk: { S: new Date().toISOString() },
            gsi2pk: { S: 'probe#running#0' },
            payload: { S: 'x'.repeat(512) },
          },
          ConditionExpression: 'attribute_not_exists(pk) OR #token = :zero',
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: { ':zero': { N: '0' } },
        }),
      ),
    );
    for (let i = 1; i < samples; i++) {
      await timed(() =>
        dynamo.send(
          new UpdateItemCommand({
            TableName: table,
            Key: { pk, sk },
            UpdateExpression: 'SET #token = :next, dueBucket = :bucket, dueAt = :at',
            // or already :next: a write applied whose answer was lost (injected faults) is retried
            ConditionExpression: '#token = :current OR #token = :next',
            ExpressionAttributeNames: { '#token': 'token' },
            ExpressionAttributeValues: {
              ':current': { N: String(i - 1) },
              ':next': { N: String(i) },
              ':bucket': { S: `due#probe#${i % 8}` },
              ':at': { N: String(Date.now()) },
            },
          }),
        ),
      );
    }
  } finally {
    await dynamo.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
    dynamo.destroy();
  }
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;
  return { samples: sorted.length, p50: Math.round(at(0.5)), p99: Math.round(at(0.99)), max: Math.round(at(1)) };
}

/**
 * The lease for a storage whose conditional writes take `latency`: at least ten times the p99
 * write latency (a heartbeat, at a third of the lease, then has three p99 writes' worth of
 * slack before the lease runs out), and never below the deployed default (30 s). Rounded up to
 * whole seconds.
 */
export function leaseMsForWriteLatency(latency: Pick<WriteLatency, 'p99'>): number {
  return Math.max(DEFAULT_LEASE_MS, Math.ceil((10 * latency.p99) / 1000) * 1000);
}

/**
 * An object standing for a part of our local AWS that this target does not have: any use of it
 * throws with `reason` (e.g. the Scheduler stand-in on moto).
 */
export function unavailable<T extends object>(what: string, reason: string): T {
  return new Proxy({} as T, {
    get(_target, property) {
      // Not a thenable, and printable: only real uses throw.
      if (property === 'then' || typeof property === 'symbol' || property === 'toJSON') return undefined;
      throw new Error(`${what} is not available on this target (${reason}); tried to use .${String(property)}`);
    },
  });
}

/** A loopback HTTP proxy that forwards one request at a time. */
export interface SerialProxy {
  /** `http://127.0.0.1:PORT`. */
  readonly endpoint: string;
  /** Requests forwarded so far. */
  readonly forwarded: number;
  stop(): Promise<void>;
}

/** An upstream answer that takes longer than this fails with 504, so one hung call cannot stop the queue. */
const PROXY_UPSTREAM_TIMEOUT_MS = 60_000;

/**
 * Starts a proxy on 127.0.0.1 that forwards every request to `upstream` strictly one after the
 * other: the next request leaves only when the previous answer is complete. In front of moto's
 * DynamoDB this restores what DynamoDB guarantees and moto does not: a conditional write is
 * checked and applied as one step, so of two concurrent claims of one job only one succeeds.
 *
 * @example
 * const proxy = await startSerialProxy(moto.endpoint);
 * process.env.AWS_ENDPOINT_URL_DYNAMODB = proxy.endpoint;
 */
export async function startSerialProxy(upstream: string): Promise<SerialProxy> {
  const target = new URL(upstream);
  let tail: Promise<void> = Promise.resolve();
  let forwarded = 0;
  const forward = (req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<void> =>
    new Promise((resolve) => {
      const fail = (status: number, error: unknown) => {
        if (!res.headersSent) res.writeHead(status, { 'content-type': 'text/plain' });
        res.end(`serial proxy: ${String(error)}`);
        resolve();
      };
      const outgoing = httpRequest(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          const parts: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => parts.push(chunk));
          answer.on('error', (error) => fail(502, error));
          answer.on('end', () => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            res.end(Buffer.concat(parts));
            resolve();
          });
        },
      );
      outgoing.setTimeout(PROXY_UPSTREAM_TIMEOUT_MS, () => outgoing.destroy(new Error('upstream timed out')));
      outgoing.on('error', (error) => fail(/timed out/.test(String(error)) ? 504 : 502, error));
      outgoing.end(body);
    });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const turn = tail.then(() => {
        forwarded += 1;
        return forward(req, Buffer.concat(chunks), res);
      });
      tail = turn.catch(() => undefined);
    });
  });
  const endpoint = await listenOnLoopback(server);
  return {
    endpoint,
    get forwarded() {
      return forwarded;
    },
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
