/**
 * The Lambda service of the deployed-stack harness. It runs each deployed function's `cdk.out`
 * bundle in execution environments of its own (child processes, test/deployed/lambda-runtime.mjs,
 * one invocation at a time each, more started while all are busy), with the environment the
 * function was deployed with plus what Lambda adds (AWS_REGION, AWS_LAMBDA_*, credentials from
 * STS AssumeRole on the function's own role), and invokes them the way AWS does:
 *
 * - each Function URL: an HTTP server building payload-format-2.0 events (test/local-aws/function-url.ts);
 * - each SQS event source mapping: a poll loop with its batch size, maximum concurrency and
 *   batch item failures (test/local-aws/lambda-runner.ts), polling with the function's role;
 * - each scheduled EventBridge rule: a scheduled event at start (awaited), then at the rule's
 *   rate (or every `scheduleIntervalMs`).
 *
 * Every AWS call of the functions (and of the pollers) goes through the recording proxy.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse } from 'aws-lambda';
import { type LocalCaller, startFunctionUrlServer } from '../local-aws/function-url';
import { lambdaContext } from '../local-aws/lambda-context';
import { type QueueRunner, startQueueRunner } from '../local-aws/lambda-runner';
import { trackChild } from '../local-aws/process-guard';
import type { LocalSecrets } from '../local-aws/sigv4-verify';
import { type AssumedRole, type AwsEndpoint, assumeRole } from './aws-api';
import { type DeployedApp, type DeployedFunction, functionUrlKey } from './deploy';
import type { Principal, RecordingProxy } from './recording-proxy';

const RUNTIME = join(import.meta.dirname, 'lambda-runtime.mjs');

export interface LambdaHostOptions {
  /** moto (STS AssumeRole). */
  api: AwsEndpoint;
  proxy: RecordingProxy;
  account: string;
  /** One log file per function (stdout and stderr of its environments, as CloudWatch Logs would hold). */
  logDir: string;
  /** Period of every scheduled rule's events. @default each rule's own `rate(...)` (a `cron(...)`: 60 s) */
  scheduleIntervalMs?: number;
  /** Loopback address the Function URLs listen on. */
  functionUrlHost: string;
  /** Credentials allowed to call `AWS_IAM` Function URLs (their signatures are verified). */
  callerSecrets: LocalSecrets;
  /**
   * Callers with identities of their own (assumed roles with a session): their signatures are
   * verified too, and each call carries its ARN in `requestContext.authorizer.iam`. @default none
   */
  callers?: readonly LocalCaller[];
  /** Execution environments per function at most. @default 8 */
  maxEnvironments?: number;
  /** Each function's deployed Timeout is enforced times this (see moto-patches.ts). @default 1 */
  timeoutFactor?: number;
}

/** Counters of one function. */
export interface FunctionStats {
  functionName: string;
  logicalId: string;
  environments: number;
  coldStarts: number;
  invocations: number;
  errors: number;
  timeouts: number;
  /** The last errors (type: message), newest last. */
  lastErrors: string[];
}

export interface LambdaHost {
  /** Starts a server per Function URL (before the deploy: their URLs go into the template); key → URL. */
  serveFunctionUrls(urls: { stackName: string; logicalId: string; authType: string }[]): Promise<Map<string, string>>;
  /** Binds the deployed functions: Function URLs, event source mappings, scheduled rules. */
  start(app: DeployedApp): Promise<void>;
  stats(): FunctionStats[];
  /** What was wired, for the run's report. */
  wiring(): Record<string, unknown>[];
  stop(): Promise<void>;
}

type Invoke = (event: unknown, context?: Context) => Promise<unknown>;

export function createLambdaHost(options: LambdaHostOptions): LambdaHost {
  const region = options.api.region;
  mkdirSync(options.logDir, { recursive: true });
  const urlServers = new Map<string, { url: string; bind(invoke: Invoke): void; stop(): Promise<void> }>();
  const pools = new Map<string, FunctionEnvironments>();
  const runners: QueueRunner[] = [];
  const runnerClients: SQSClient[] = [];
  const timers: NodeJS.Timeout[] = [];
  const wiring: Record<string, unknown>[] = [];
  let stopping: Promise<void> | undefined;

  async function credentialsFor(fn: DeployedFunction, via: Principal['via']): Promise<AssumedRole> {
    const name = fn.configuration.FunctionName;
    const session = `${via === 'function' ? 'fn' : 'esm'}-${name}`.slice(0, 64);
    const role = await assumeRole(options.api, fn.configuration.Role, session);
    options.proxy.register(role.accessKeyId, {
      name: fn.logicalId,
      via,
      functionName: name,
      roleArn: fn.configuration.Role,
      assumedRoleArn: role.assumedRoleArn,
    });
    return role;
  }

  return {
    async serveFunctionUrls(urls) {
      const served = new Map<string, string>();
      for (const { stackName, logicalId, authType } of urls) {
        let bound: Invoke | undefined;
        const server = await startFunctionUrlServer({
          host: options.functionUrlHost,
          region,
          functionName: logicalId,
          authType: authType === 'AWS_IAM' ? 'AWS_IAM' : 'NONE',
          secrets: options.callerSecrets,
          callers: options.callers ?? [],
          // The function's own timeout is enforced by its environments (which end a timed-out one).
          timeoutMs: 900_000,
          handler: async (event, context) => {
            if (!bound) throw new Error(`Function URL ${logicalId} is not bound to a function yet`);
            return (await bound(event, context)) as never;
          },
        });
        const url = `${server.url}/`;
        urlServers.set(functionUrlKey(stackName, logicalId), {
          url,
          bind: (invoke) => {
            bound = invoke;
          },
          stop: () => server.stop(),
        });
        served.set(functionUrlKey(stackName, logicalId), url);
      }
      return served;
    },

    async start(app) {
      const byArn = new Map(app.functions.map((fn) => [fn.configuration.FunctionArn, fn]));
      const byName = new Map(app.functions.map((fn) => [fn.configuration.FunctionName, fn]));
      for (const fn of app.functions) {
        const credentials = await credentialsFor(fn, 'function');
        pools.set(
          fn.configuration.FunctionName,
          new FunctionEnvironments(fn, lambdaEnvironment(fn, credentials, region), {
            awsEndpoint: options.proxy.endpoint,
            logFile: join(options.logDir, `${fn.logicalId}.log`),
            timeoutMs: (fn.configuration.Timeout ?? 3) * 1000 * (options.timeoutFactor ?? 1),
            maxEnvironments: Math.min(
              options.maxEnvironments ?? 8,
              fn.configuration.ReservedConcurrentExecutions ?? Number.POSITIVE_INFINITY,
            ),
          }),
        );
      }
      const poolOf = (fn: DeployedFunction) => pools.get(fn.configuration.FunctionName) as FunctionEnvironments;

      for (const url of app.functionUrls) {
        const fn = byName.get(url.functionName);
        const server = urlServers.get(functionUrlKey(url.stackName, url.logicalId));
        if (!fn || !server) throw new Error(`Function URL ${url.logicalId}: no function ${url.functionName}`);
        server.bind((event, context) => poolOf(fn).invoke(event, context));
        wiring.push({ kind: 'function-url', url: url.url, authType: url.authType, function: fn.logicalId });
      }

      for (const mapping of app.mappings) {
        const fn = byArn.get(mapping.FunctionArn);
        if (!fn) continue; // another app's
        const [, , service, , account, queueName] = mapping.EventSourceArn.split(':');
        if (service !== 'sqs' || !queueName) {
          throw new Error(
            `event source mapping ${mapping.UUID}: only SQS sources are hosted (${mapping.EventSourceArn})`,
          );
        }
        const reportsItemFailures = (mapping.FunctionResponseTypes ?? []).includes('ReportBatchItemFailures');
        if (!reportsItemFailures) {
          throw new Error(
            `event source mapping of ${fn.logicalId} has no ReportBatchItemFailures: the host only runs mappings that report batch item failures`,
          );
        }
        const credentials = await credentialsFor(fn, 'event-source-mapping');
        const sqs = new SQSClient({
          region,
          endpoint: options.proxy.endpoint,
          credentials: {
            accessKeyId: credentials.accessKeyId,
            secretAccessKey: credentials.secretAccessKey,
            sessionToken: credentials.sessionToken,
          },
        });
        runnerClients.push(sqs);
        const maxConcurrency = mapping.ScalingConfig?.MaximumConcurrency ?? 5;
        const queueUrl = `https://sqs.${region}.amazonaws.com/${account}/${queueName}`;
        runners.push(
          startQueueRunner({
            queueUrl,
            queueArn: mapping.EventSourceArn,
            functionName: fn.configuration.FunctionName,
            handler: (event, context) => poolOf(fn).invoke(event, context) as Promise<SQSBatchResponse>,
            batchSize: mapping.BatchSize ?? 10,
            maxConcurrency,
            waitTimeSeconds: 2,
            // The environment ends a timed-out invocation first; this is the runner's backstop.
            timeoutMs: (fn.configuration.Timeout ?? 3) * 1000 * (options.timeoutFactor ?? 1) + 5_000,
            sqs,
          }),
        );
        wiring.push({
          kind: 'event-source-mapping',
          queue: queueName,
          function: fn.logicalId,
          batchSize: mapping.BatchSize,
          maxConcurrency,
        });
      }

      for (const rule of app.rules) {
        if (rule.state === 'DISABLED' || !rule.scheduleExpression) continue;
        const intervalMs = options.scheduleIntervalMs ?? ratePeriodMs(rule.scheduleExpression) ?? 60_000;
        for (const target of rule.targets) {
          const fn = byArn.get(target.arn);
          if (!fn) continue;
          let running: Promise<unknown> | undefined;
          const fire = () => {
            if (running) return running; // the previous pass is still running: skip this tick
            const event = target.input ? JSON.parse(target.input) : scheduledEvent(rule.arn, options.account, region);
            running = poolOf(fn)
              .invoke(event)
              .catch(() => undefined) // counted in the function's stats
              .finally(() => {
                running = undefined;
              });
            return running;
          };
          // A first event at once, finished before the tests start: what the target writes on its
          // first run (the supervisor's cursors) is then there before any test counts items.
          await fire();
          const timer = setInterval(fire, intervalMs);
          timer.unref();
          timers.push(timer);
          wiring.push({
            kind: 'scheduled-rule',
            rule: rule.name,
            expression: rule.scheduleExpression,
            every: `${intervalMs} ms`,
            function: fn.logicalId,
          });
        }
      }
    },

    stats: () => [...pools.values()].map((pool) => pool.stats),
    wiring: () => wiring,

    stop() {
      stopping ??= (async () => {
        for (const timer of timers) clearInterval(timer);
        await Promise.all(runners.map((runner) => runner.stop()));
        for (const client of runnerClients) client.destroy();
        await Promise.all([...urlServers.values()].map((server) => server.stop()));
        await Promise.all([...pools.values()].map((pool) => pool.stop()));
      })();
      return stopping;
    },
  };
}

/** The period of `rate(5 minutes)`-style expressions, in ms; undefined for anything else. */
export function ratePeriodMs(expression: string): number | undefined {
  const match = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/.exec(expression.trim());
  if (!match) return undefined;
  const unit = { minute: 60_000, hour: 3_600_000, day: 86_400_000 }[match[2]?.replace(/s$/, '') as 'minute'];
  return Number(match[1]) * unit;
}

/** An EventBridge scheduled event, as a rule's `rate(...)`/`cron(...)` delivers it. */
function scheduledEvent(ruleArn: string, account: string, region: string) {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account,
    time: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region,
    resources: [ruleArn],
    detail: {},
  };
}

/**
 * The process environment of a function's execution environment: the variables it was deployed
 * with (resolved by CloudFormation, as GetFunctionConfiguration shows them), then what Lambda
 * itself sets, which a function cannot override. No endpoint variables: AWS is reached at its
 * hostnames (aws-network.mjs).
 */
export function lambdaEnvironment(
  fn: DeployedFunction,
  credentials: Pick<AssumedRole, 'accessKeyId' | 'secretAccessKey' | 'sessionToken'>,
  region: string,
): Record<string, string> {
  const config = fn.configuration;
  const runtime = config.Runtime ?? 'nodejs24.x';
  return {
    ...(config.Environment?.Variables ?? {}),
    AWS_REGION: region,
    AWS_DEFAULT_REGION: region,
    AWS_EXECUTION_ENV: `AWS_Lambda_${runtime}`,
    AWS_LAMBDA_FUNCTION_NAME: config.FunctionName,
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(config.MemorySize ?? 128),
    AWS_LAMBDA_LOG_GROUP_NAME: config.LoggingConfig?.LogGroup ?? `/aws/lambda/${config.FunctionName}`,
    AWS_LAMBDA_LOG_STREAM_NAME: `${new Date().toISOString().slice(0, 10).replaceAll('-', '/')}/[$LATEST]${randomUUID().replaceAll('-', '')}`,
    AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
    _HANDLER: config.Handler,
    LAMBDA_TASK_ROOT: fn.bundleDir,
    TZ: ':UTC',
    LANG: 'en_US.UTF-8',
    PATH: '/usr/local/bin:/usr/bin:/bin',
    AWS_ACCESS_KEY_ID: credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    AWS_SESSION_TOKEN: credentials.sessionToken,
  };
}

// ---------------------------------------------------------------------------------------------

interface Environment {
  child: ChildProcess;
  ready: Promise<void>;
  /** Settles the invocation in flight, if any, when the process ends. */
  onExit?: (reason: string) => void;
  dead: boolean;
}

/** The execution environments of one function: one invocation each at a time. */
class FunctionEnvironments {
  readonly stats: FunctionStats;
  private readonly idle: Environment[] = [];
  private readonly all = new Set<Environment>();
  private readonly waiting: ((env: Environment) => void)[] = [];
  private readonly logFd: number;
  private starting = 0;
  private stopped = false;

  constructor(
    private readonly fn: DeployedFunction,
    private readonly env: Record<string, string>,
    private readonly options: { awsEndpoint: string; logFile: string; maxEnvironments: number; timeoutMs: number },
  ) {
    this.logFd = openSync(options.logFile, 'a');
    this.stats = {
      functionName: fn.configuration.FunctionName,
      logicalId: fn.logicalId,
      environments: 0,
      coldStarts: 0,
      invocations: 0,
      errors: 0,
      timeouts: 0,
      lastErrors: [],
    };
  }

  /** Invokes the function once, as Lambda's synchronous Invoke does; rejects with the function's error. */
  async invoke(event: unknown, given?: Context): Promise<unknown> {
    if (this.stopped) throw new Error(`${this.fn.logicalId} is stopped`);
    this.stats.invocations += 1;
    const timeoutMs = this.options.timeoutMs;
    const env = await this.acquire();
    try {
      return await this.run(env, event, timeoutMs, given);
    } catch (error) {
      if (this.stopped) throw error; // ended by the host's teardown, not by the function
      this.stats.errors += 1;
      this.stats.lastErrors.push(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
      if (this.stats.lastErrors.length > 20) this.stats.lastErrors.shift();
      throw error;
    } finally {
      this.release(env);
    }
  }

  private run(env: Environment, event: unknown, timeoutMs: number, given?: Context): Promise<unknown> {
    const config = this.fn.configuration;
    const base = lambdaContext({
      functionName: config.FunctionName,
      timeoutMs,
      region: this.env.AWS_REGION ?? 'us-east-1',
      memoryMb: config.MemorySize ?? 128,
      ...(given?.awsRequestId ? { awsRequestId: given.awsRequestId } : {}),
    });
    const context = {
      functionName: base.functionName,
      functionVersion: base.functionVersion,
      invokedFunctionArn: config.FunctionArn,
      memoryLimitInMB: base.memoryLimitInMB,
      awsRequestId: base.awsRequestId,
      logGroupName: this.env.AWS_LAMBDA_LOG_GROUP_NAME ?? base.logGroupName,
      logStreamName: this.env.AWS_LAMBDA_LOG_STREAM_NAME ?? base.logStreamName,
      deadlineMs: Date.now() + timeoutMs,
    };
    const id = randomUUID();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.stats.timeouts += 1;
        // Lambda ends a timed-out environment; the next invocation gets a fresh one.
        this.kill(env);
        settle(() =>
          reject(namedError('TimeoutError', `Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds`)),
        );
      }, timeoutMs);
      let settled = false;
      const settle = (action: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        env.child.off('message', onMessage);
        env.onExit = undefined;
        action();
      };
      const onMessage = (message: {
        type?: string;
        id?: string;
        ok?: boolean;
        result?: unknown;
        error?: LambdaError;
      }) => {
        if (message?.type !== 'result' || message.id !== id) return;
        if (message.ok) settle(() => resolve(message.result));
        else settle(() => reject(fromLambdaError(message.error)));
      };
      env.onExit = (reason) => settle(() => reject(namedError('Runtime.ExitError', reason)));
      env.child.on('message', onMessage);
      env.child.send({ type: 'invoke', id, event, context });
    });
  }

  private async acquire(): Promise<Environment> {
    for (;;) {
      const env = this.idle.pop();
      if (env && !env.dead) return env;
      if (env) continue;
      if (this.all.size + this.starting < this.options.maxEnvironments) {
        this.starting += 1;
        try {
          const fresh = this.spawn();
          await fresh.ready;
          return fresh;
        } finally {
          this.starting -= 1;
        }
      }
      const handedOver = await new Promise<Environment>((resolve) => this.waiting.push(resolve));
      if (!handedOver.dead) return handedOver;
    }
  }

  private release(env: Environment): void {
    if (env.dead) {
      // A waiter may now start an environment of its own.
      const next = this.waiting.shift();
      if (next) next(env);
      return;
    }
    const next = this.waiting.shift();
    if (next) next(env);
    else this.idle.push(env);
  }

  private spawn(): Environment {
    const config = this.fn.configuration;
    this.stats.environments += 1;
    this.stats.coldStarts += 1;
    const child = fork(RUNTIME, [this.options.awsEndpoint, this.fn.bundleDir, config.Handler], {
      cwd: this.fn.bundleDir,
      env: this.env,
      execPath: process.execPath,
      execArgv: [],
      stdio: ['ignore', this.logFd, this.logFd, 'ipc'],
      serialization: 'json',
    });
    trackChild(child);
    const env: Environment = { child, dead: false, ready: Promise.resolve() };
    this.all.add(env);
    env.ready = new Promise<void>((resolve, reject) => {
      const onMessage = (message: { type?: string; error?: LambdaError }) => {
        if (message?.type === 'ready') {
          child.off('message', onMessage);
          resolve();
        } else if (message?.type === 'init-error') {
          child.off('message', onMessage);
          reject(fromLambdaError(message.error, 'Runtime.InitError'));
        }
      };
      child.on('message', onMessage);
      child.once('exit', (code, signal) =>
        reject(namedError('Runtime.ExitError', `exited during init (${code ?? signal})`)),
      );
    });
    env.ready.catch(() => this.kill(env));
    child.once('exit', (code, signal) => {
      env.dead = true;
      this.all.delete(env);
      env.onExit?.(`Runtime exited (${signal ?? `code ${code}`}) during the invocation`);
    });
    return env;
  }

  private kill(env: Environment): void {
    env.dead = true;
    this.all.delete(env);
    if (env.child.exitCode === null && env.child.signalCode === null) env.child.kill('SIGKILL');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const exits = [...this.all].map(
      (env) =>
        new Promise<void>((resolve) => {
          if (env.child.exitCode !== null || env.child.signalCode !== null) return resolve();
          env.child.once('exit', () => resolve());
          env.child.kill('SIGTERM');
          setTimeout(() => env.child.kill('SIGKILL'), 2_000).unref();
        }),
    );
    await Promise.all(exits);
    closeSync(this.logFd);
  }
}

interface LambdaError {
  errorType?: string;
  errorMessage?: string;
  stack?: string[];
}

function namedError(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

function fromLambdaError(error: LambdaError | undefined, fallbackType = 'Error'): Error {
  const result = namedError(error?.errorType ?? fallbackType, error?.errorMessage ?? 'unknown error');
  if (error?.stack?.length) result.stack = error.stack.join('\n');
  return result;
}
