/**
 * One way to start the platform in a test, in either mode:
 *
 * - `memory` (the default): the production API and workers on the in-memory ports, with an
 *   in-process delivery loop for SQS, Lambda and Scheduler, on a `ManualClock` (memory-platform.ts).
 *   Milliseconds a test, nothing to install.
 * - `local-aws`: the same code on DynamoDB Local (Java), fauxqs and the Scheduler stand-in
 *   (`startLocalAws` + `startLocalPlatform`), through the real AWS SDK clients. Seconds a file;
 *   it proves what the in-memory mode cannot (AWS serialisation, the adapters' conditional
 *   writes on a real DynamoDB, the emulators' SQS behaviour).
 *
 * Both give the API's URL, a typed client, `runUntilIdle()`, `advance(ms)`, `steps(jobId)`,
 * `supervise()` and `stop()`, so one test file can run in both (see docs/testing-your-jobs.md).
 */
import type { ClientOptions, JobCatalog, JobTypesFor, OrreryClient } from '../../shared/client';
import { createClient } from '../../shared/client';
import type { Clock } from '../../shared/core/clock';
import type { Job } from '../../shared/core/job';
import type { JobTypeSpec } from '../../shared/core/job-type';
import type { Journal, JournalKind } from '../../shared/core/journal';
import type { JobStore } from '../../shared/core/ports';
import { EARLY_START_TOLERANCE_MS } from '../../shared/core/scheduling';
import { isSettled } from '../../shared/core/states';
import { incarnationOf } from '../../shared/core/table';
import type { Logger, LogLevel } from '../../shared/logger';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import type { WorkerDeps } from '../../shared/runtime/worker';
import type { SupervisorReport } from '../../shared/supervisor/run';
import type { LocalAws } from './index';
import type { LocalAccessOptions } from './local-access';
import type { LocalPlatform, LocalPlatformOptions } from './local-platform';
import { type MemoryPlatform, type MemoryPlatformOptions, startMemoryPlatform } from './memory-platform';

export type TestPlatformMode = 'memory' | 'local-aws';

export interface TestPlatformOptions extends LocalAccessOptions {
  /** Job definitions (spec + handler) to run. */
  jobs: readonly JobDefinition[];
  /** @default 'memory' */
  mode?: TestPlatformMode;
  /** Specs the API validates against. @default the specs of `jobs` */
  catalog?: readonly JobTypeSpec[];
  /**
   * The platform clock. A `ManualClock` makes time travel possible (`advance`).
   * @default memory: a new ManualClock at the current time; local-aws: the system clock
   */
  clock?: Clock;
  /** Days a finished job is kept. @default 30 */
  retentionDays?: number;
  /** Receives before a message moves to its DLQ. @default 30 */
  maxReceiveCount?: number;
  /** Extra options passed to every worker (a fixed `random` makes retry jitter repeatable). */
  worker?: Partial<Pick<WorkerDeps, 'random' | 'owner' | 'leaseMs'>>;
  /** @default a logger at `logLevel` */
  logger?: Logger;
  /** @default 'warn' */
  logLevel?: LogLevel;
  /**
   * local-aws: a running local AWS to deploy into (e.g. one per file, shared by its tests). Its
   * Scheduler stand-in must run on the same clock. @default one is started, and stopped by `stop()`
   */
  aws?: LocalAws;
  /** local-aws: resource-name prefix (table, queues). @default a unique one */
  prefix?: string;
  /** Options only the in-memory mode takes. */
  memory?: Partial<Omit<MemoryPlatformOptions, 'jobs'>>;
  /** Options only the local-AWS mode takes. */
  localAws?: Partial<Omit<LocalPlatformOptions, 'jobs' | 'aws'>>;
}

/** One recorded entry of a job's journal: a step's result, a sleep's end, a signal wait's outcome. */
export interface RecordedStep {
  kind: JournalKind;
  name: string;
  /**
   * What was recorded: a step's result (`step`); a sleep's end, epoch ms (`sleep`); a signal
   * wait's deadline, epoch ms (`wait`), and its outcome (`signal`: `{ received: <ISO time> }`,
   * or `{ timedOutAt: <ISO time> }`).
   */
  value: unknown;
  /** ISO 8601 time it was recorded. */
  at: string;
  /** For a signal wait that received its signal: the signal's payload (from the job's inbox). */
  payload?: unknown;
}

export interface TestPlatform {
  readonly mode: TestPlatformMode;
  /** Base URL of the API (a loopback HTTP server in both modes). */
  readonly url: string;
  readonly clock: Clock;
  /**
   * A typed client for the API. Pass the specs (`{ invoice: invoiceJob }`, or the catalog tuple)
   * to have payloads checked at compile time, as `createClient` does.
   */
  client<C extends JobCatalog = JobCatalog>(
    jobs?: C,
    options?: Omit<ClientOptions<C>, 'url' | 'jobs'>,
  ): OrreryClient<JobTypesFor<C>>;
  /**
   * What a job's runs recorded (its journal: `ctx.step` results, `ctx.sleep` ends, signal waits'
   * outcomes), by the time each was recorded, then by kind and name (entries recorded at one
   * clock time have no order of their own). The API does not serve the journal; this reads it
   * from the store.
   */
  steps(jobId: string): Promise<RecordedStep[]>;
  /** Delivers what is due and waits until nothing is due and no handler runs. */
  runUntilIdle(options?: { timeoutMs?: number }): Promise<void>;
  /**
   * Moves a `ManualClock` forward by `ms` and delivers what that made due. In memory, event by
   * event (messages, schedules, handlers' timeouts); on local AWS, the Scheduler stand-in fires
   * what is due, but delays SQS holds (retries' backoff, sleeps up to 11 h 40 min) pass in real time.
   */
  advance(ms: number): Promise<void>;
  /** Runs one supervisor pass at the clock's time. */
  supervise(): Promise<SupervisorReport>;
  /** Stops the platform (and the local AWS it started). */
  stop(): Promise<void>;
  /** The in-memory platform (ports, delivery loop), in `memory` mode. */
  readonly memory?: MemoryPlatform;
  /** The local platform (SDK clients, store, deployment), in `local-aws` mode. */
  readonly local?: LocalPlatform;
}

/**
 * Starts the platform for a test, in memory (the default) or on local AWS.
 *
 * @example
 * const platform = await createTestPlatform({ jobs: [invoice] });
 * const orrery = platform.client({ invoice: invoiceJob });
 * const { job } = await orrery.enqueue('invoice', { orderId: 'o-1' });
 * await platform.runUntilIdle();
 * expect((await orrery.get(job.id)).state).toBe('succeeded');
 * await platform.stop();
 */
export async function createTestPlatform(options: TestPlatformOptions): Promise<TestPlatform> {
  return (options.mode ?? 'memory') === 'memory' ? inMemory(options) : onLocalAws(options);
}

function clientFor(url: string) {
  return <C extends JobCatalog = JobCatalog>(jobs?: C, options: Omit<ClientOptions<C>, 'url' | 'jobs'> = {}) =>
    createClient<C>({ ...options, url, ...(jobs ? { jobs } : {}) });
}

/** The journal entries of a job's current incarnation, oldest first. */
async function readSteps(store: JobStore, journal: Journal, jobId: string): Promise<RecordedStep[]> {
  const job = await store.get(jobId);
  if (!job) throw new Error(`no job ${jobId}`);
  const scope = { jobId, incarnation: incarnationOf(job.createdAt) };
  const steps = await Promise.all(
    [...(await journal.load(scope))].map(async ([key, entry]): Promise<RecordedStep> => {
      const cut = key.indexOf('#');
      const step = {
        kind: key.slice(0, cut) as JournalKind,
        name: key.slice(cut + 1),
        value: entry.value,
        at: entry.at,
      };
      const received =
        step.kind === 'signal' && typeof entry.value === 'object' && entry.value && 'received' in entry.value;
      const signal = received ? await journal.signal({ ...scope, name: step.name }) : undefined;
      return signal ? { ...step, payload: signal.payload } : step;
    }),
  );
  // the journal keeps no order of its own (DynamoDB reads it by name): by time, then by name
  const order = (step: RecordedStep) => `${step.at} ${step.kind}#${step.name}`;
  return steps.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
}

async function inMemory(options: TestPlatformOptions): Promise<TestPlatform> {
  const memory = await startMemoryPlatform({
    ...options.memory,
    jobs: options.jobs,
    ...(options.catalog ? { catalog: options.catalog } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.retentionDays ? { retentionDays: options.retentionDays } : {}),
    ...(options.maxReceiveCount ? { maxReceiveCount: options.maxReceiveCount } : {}),
    ...(options.worker ? { worker: options.worker } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.logLevel ? { logLevel: options.logLevel } : {}),
    ...(options.grants ? { grants: options.grants } : {}),
    ...(options.callers ? { callers: options.callers } : {}),
  });
  return {
    mode: 'memory',
    url: memory.url,
    clock: memory.clock,
    client: clientFor(memory.url),
    steps: (jobId) => readSteps(memory.ports.store, memory.ports.journal, jobId),
    runUntilIdle: (idle) => memory.runUntilIdle(idle),
    advance: (ms) => memory.advance(ms),
    supervise: () => memory.supervise(),
    stop: () => memory.stop(),
    memory,
  };
}

async function onLocalAws(options: TestPlatformOptions): Promise<TestPlatform> {
  // Loaded only here: the in-memory mode needs neither the emulators nor the SDK clients.
  const [{ startLocalAws }, { startLocalPlatform }, { uniquePrefix }, { DynamoJournal }] = await Promise.all([
    import('./index'),
    import('./local-platform'),
    import('./namespace'),
    import('../../shared/aws/dynamo-journal'),
  ]);
  const { systemClock } = await import('../../shared/core/clock');
  const clock = options.clock ?? systemClock;
  const aws = options.aws ?? (await startLocalAws({ clock }));
  /** Every job created, so that `runUntilIdle` knows what to look at. */
  const created = new Set<string>();
  let local: LocalPlatform;
  try {
    local = await startLocalPlatform({
      ...options.localAws,
      aws,
      prefix: options.prefix ?? uniquePrefix('test'),
      jobs: options.jobs,
      clock,
      ...(options.catalog ? { catalog: options.catalog } : {}),
      ...(options.retentionDays ? { retentionDays: options.retentionDays } : {}),
      ...(options.maxReceiveCount ? { maxReceiveCount: options.maxReceiveCount } : {}),
      ...(options.worker ? { worker: { ...options.localAws?.worker, ...options.worker } } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
      ...(options.grants ? { grants: options.grants } : {}),
      ...(options.callers ? { callers: options.callers } : {}),
      wrapStore: (store) => {
        const inner = options.localAws?.wrapStore ? options.localAws.wrapStore(store) : store;
        return new Proxy(inner, {
          get(target, name, receiver) {
            const value = Reflect.get(target, name, receiver) as unknown;
            if (name !== 'create' || typeof value !== 'function') return value;
            return (job: Job) => {
              created.add(job.id);
              return (value as (job: Job) => Promise<unknown>).call(target, job);
            };
          },
        });
      },
    });
  } catch (error) {
    if (!options.aws) await aws.stop();
    throw error;
  }
  const journal = new DynamoJournal(local.clients.dynamo, local.config.tableName);

  /** True when no job is running, or due to start, and no ready queue has a visible message. */
  async function idle(): Promise<boolean> {
    const now = clock.now();
    for (const id of created) {
      const job = await local.store.get(id);
      if (!job || isSettled(job.state)) continue;
      if (job.state === 'running') return false;
      const due = Date.parse(job.runAt) - now <= EARLY_START_TOLERANCE_MS;
      if (due && job.pendingParents === undefined) return false;
    }
    if (aws.target !== 'local') return true;
    for (const queues of Object.values(local.deployment.queues)) {
      const name = queues.url.slice(queues.url.lastIndexOf('/') + 1);
      if ((aws.sqs.inspect(name)?.visible ?? 0) > 0) return false;
    }
    return true;
  }

  async function runUntilIdle({ timeoutMs = 30_000 } = {}): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    // twice in a row, a poll apart: a job that just ended may be releasing its children
    let calm = 0;
    while (calm < 2) {
      calm = (await idle()) ? calm + 1 : 0;
      if (calm >= 2) return;
      if (Date.now() > deadline) throw new Error(`the local platform is not idle after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  return {
    mode: 'local-aws',
    url: local.url,
    clock,
    client: clientFor(local.url),
    steps: (jobId) => readSteps(local.store, journal, jobId),
    runUntilIdle,
    async advance(ms) {
      const manual = clock as Clock & { advance?: (ms: number) => number };
      if (typeof manual.advance !== 'function') {
        throw new Error('advance() needs a ManualClock: pass `clock: new ManualClock()` to createTestPlatform');
      }
      manual.advance(ms);
      await runUntilIdle();
    },
    supervise: () => local.supervise(),
    async stop() {
      await local.stop();
      if (!options.aws) await aws.stop();
    },
    local,
  };
}
