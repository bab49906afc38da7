/**
 * The platform in memory: the production API handler (behind the same Function URL-shaped HTTP
 * server as the local-AWS mode) and the production worker of each job type, on the in-memory
 * ports that pass the adapters' contract suites (memory-*.ts), with an in-process loop in place
 * of SQS, Lambda's event source mappings and EventBridge Scheduler (memory-delivery.ts). No JVM,
 * no emulator, no AWS SDK call: a test takes milliseconds.
 *
 * Time is the platform clock's, a `ManualClock` unless told otherwise: a message, a retry's
 * backoff, a sleep or a Scheduler-delayed job is due when the clock reaches it, and so is a
 * handler's timeout. `advance(ms)` moves the clock event by event, delivering what each step made
 * due; `runUntilIdle()` waits until nothing is due and no handler runs.
 *
 * What it does not prove: see docs/testing-your-jobs.md ("What the in-memory mode does not
 * prove"). The local-AWS mode (`startLocalPlatform`) runs the same code on DynamoDB Local and
 * fauxqs for that.
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { createEventSender } from '../../shared/api/event-sender';
import { type ApiHandler, createApiHandler } from '../../shared/api/handler';
import { namedRoute, type PlatformConfig, type QueueNaming } from '../../shared/config';
import { type Clock, ManualClock } from '../../shared/core/clock';
import type { JobTypeSpec } from '../../shared/core/job-type';
import type { Metrics } from '../../shared/core/metrics';
import { lambdaTimeoutSeconds, MAX_RECEIVE_COUNT, visibilityTimeoutSeconds } from '../../shared/core/queue-settings';
import { createLogger, type Logger, type LogLevel } from '../../shared/logger';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { createWorker, type WorkerDeps } from '../../shared/runtime/worker';
import type { SupervisorOptions } from '../../shared/supervisor/plan';
import { runSupervisorOnce, type SupervisorReport } from '../../shared/supervisor/run';
import { startFunctionUrlServer } from './function-url';
import { type LocalAccessOptions, localAccess } from './local-access';
import { FakeDeadLetterQueues, FakeJobControl, FakeJobIndex, FakeRedriveLog } from './memory-control';
import { MemoryDelivery } from './memory-delivery';
import { FakeDueIndex } from './memory-due-index';
import { FakeEventWaits } from './memory-event-waits';
import { FakeJobQueue, FakeJobScheduler, FakeJobStore } from './memory-fakes';
import { FakeDebouncer, FakeFlowSlots, FakePacer } from './memory-flow';
import { FakeJobGraph } from './memory-graph';
import { FakeJournal } from './memory-journal';
import { FakeRecurringTrigger, FakeScheduleStore } from './memory-schedules';
import { ManualTimer } from './memory-timer';
import { LOCAL_ACCOUNT_ID } from './sqs';

export interface MemoryPlatformOptions extends LocalAccessOptions {
  /** Job definitions (spec + handler) to run. */
  jobs: readonly JobDefinition[];
  /** Specs the API validates against. @default the specs of `jobs` */
  catalog?: readonly JobTypeSpec[];
  /**
   * The platform clock (API, workers, the delivery loop). With a `ManualClock`, nothing becomes
   * due until it moves (`advance`), and handlers' timeouts fire on it too.
   * @default a new ManualClock at the current time
   */
  clock?: Clock;
  /** Queue-name prefix (letters, digits, `-`). @default 'orrery' */
  prefix?: string;
  /** Days a finished job is kept. @default 30 */
  retentionDays?: number;
  /** Receives before a message moves to its DLQ. @default MAX_RECEIVE_COUNT (30) */
  maxReceiveCount?: number;
  /** Ready-queue visibility timeout (seconds), for every type or per type. @default 6 × the worker Lambda's timeout */
  visibilityTimeoutSeconds?: number | Record<string, number>;
  /** As on an event source mapping. @default { batchSize: 10, maxConcurrency: 4 } */
  runner?: { batchSize?: number; maxConcurrency?: number };
  /** Extra options passed to every worker (a fixed `random` makes retry jitter repeatable). */
  worker?: Partial<Pick<WorkerDeps, 'random' | 'owner' | 'leaseMs'>>;
  /** @default a logger at `logLevel` */
  logger?: Logger;
  /** @default 'warn' */
  logLevel?: LogLevel;
  /** Where the API and the workers record their metrics. @default none */
  metrics?: Metrics;
  /** Overrides of the supervisor's defaults, for `supervise()`. */
  supervisor?: Partial<SupervisorOptions>;
  /** Port of the API's HTTP server on 127.0.0.1. @default 0 (a free one) */
  port?: number;
  /** Deliver messages without being asked (after every send, and when the clock reaches one). @default true */
  autoDeliver?: boolean;
}

/** Every in-memory port of the platform, for assertions (`ports.store.peek(id)`, `ports.journal`, …). */
export interface MemoryPorts {
  store: FakeJobStore;
  queue: FakeJobQueue;
  scheduler: FakeJobScheduler;
  journal: FakeJournal;
  /** The match index of event waits (`ctx.waitForEvent`). */
  eventWaits: FakeEventWaits;
  graph: FakeJobGraph;
  flow: FakeFlowSlots;
  pacer: FakePacer;
  debouncer: FakeDebouncer;
  index: FakeJobIndex;
  control: FakeJobControl;
  deadLetters: FakeDeadLetterQueues;
  redrives: FakeRedriveLog;
  schedules: FakeScheduleStore;
  trigger: FakeRecurringTrigger;
  dueIndex: FakeDueIndex;
}

export interface MemoryPlatform {
  /** Base URL of the API, e.g. `http://127.0.0.1:43121`. */
  url: string;
  config: PlatformConfig;
  clock: Clock;
  api: ApiHandler;
  /** The SQS batch handler of each job type, as the Lambda would run it. */
  workers: Record<string, (event: SQSEvent) => Promise<SQSBatchResponse>>;
  ports: MemoryPorts;
  delivery: MemoryDelivery;
  /** Runs one supervisor pass at the platform clock's time. */
  supervise(): Promise<SupervisorReport>;
  /**
   * Delivers everything due at the clock's time and waits until nothing is due and no handler
   * runs. Throws after `timeoutMs` of real time, naming the jobs whose handlers still run (a
   * handler waiting for its timeout on a `ManualClock` needs `advance`).
   */
  runUntilIdle(options?: { timeoutMs?: number }): Promise<void>;
  /**
   * Moves a `ManualClock` forward by `ms`, one due event at a time (a message's or a schedule's
   * time, a handler's timeout), delivering what each step makes due. Returns once nothing is due
   * and nothing has happened for a moment: a handler still waiting on the clock keeps running.
   */
  advance(ms: number): Promise<void>;
  /**
   * Stops delivering and the API server; resolves once running invocations have ended (a
   * handler waiting for its timeout on the ManualClock gets it), or after 5 s of real time.
   */
  stop(): Promise<void>;
}

const REGION = 'us-east-1';
/** Real time without any port call after which `advance` takes the platform to be waiting on the clock. */
const QUIET_MS = 10;

const isManual = (clock: Clock): clock is ManualClock =>
  clock instanceof ManualClock || ('advance' in clock && 'set' in clock && 'onChange' in clock);

/**
 * Starts the platform in memory.
 *
 * @example
 * const platform = await startMemoryPlatform({ jobs: [invoice] });
 * const orrery = createClient({ url: platform.url, jobs: { invoice: invoice.spec } });
 * const { job } = await orrery.enqueue('invoice', { orderId: 'o-1' });
 * await platform.runUntilIdle();
 * expect((await orrery.get(job.id)).state).toBe('succeeded');
 * await platform.stop();
 */
export async function startMemoryPlatform(options: MemoryPlatformOptions): Promise<MemoryPlatform> {
  const clock = options.clock ?? new ManualClock();
  const timer = isManual(clock) ? new ManualTimer(clock) : undefined;
  const logger = options.logger ?? createLogger({ level: options.logLevel ?? 'warn' });
  const catalog = options.catalog ?? options.jobs.map((job) => job.spec);
  const maxReceiveCount = options.maxReceiveCount ?? MAX_RECEIVE_COUNT;
  const naming: QueueNaming = {
    urlBase: `https://sqs.${REGION}.amazonaws.com/${LOCAL_ACCOUNT_ID}/`,
    arnBase: `arn:aws:sqs:${REGION}:${LOCAL_ACCOUNT_ID}:`,
    prefix: options.prefix ?? 'orrery',
  };
  const types = [...new Set([...catalog.map((spec) => spec.type), ...options.jobs.map((job) => job.spec.type)])];
  const config: PlatformConfig = {
    tableName: `${naming.prefix}-jobs`,
    queues: naming,
    maxReceiveCount,
    routes: Object.fromEntries(types.map((type) => [type, namedRoute(naming, type, maxReceiveCount)])),
    scheduleGroup: naming.prefix,
    schedulerRoleArn: `arn:aws:iam::${LOCAL_ACCOUNT_ID}:role/${naming.prefix}-scheduler`,
    retentionDays: options.retentionDays ?? 30,
    logLevel: options.logLevel ?? 'warn',
  };

  const store = new FakeJobStore();
  const journal = new FakeJournal();
  const ports: MemoryPorts = {
    store,
    queue: new FakeJobQueue(),
    scheduler: new FakeJobScheduler(),
    journal,
    graph: new FakeJobGraph(store),
    flow: new FakeFlowSlots(),
    pacer: new FakePacer(),
    debouncer: new FakeDebouncer(),
    index: new FakeJobIndex(store),
    control: new FakeJobControl(store),
    deadLetters: new FakeDeadLetterQueues(),
    redrives: new FakeRedriveLog(),
    schedules: new FakeScheduleStore(),
    trigger: new FakeRecurringTrigger(),
    dueIndex: new FakeDueIndex(store, journal),
    eventWaits: new FakeEventWaits(),
  };

  // Every call of a port is activity (what `advance` waits to die down), and after each one the
  // delivery loop takes in what was sent, at the clock's time of the send.
  let activity = 0;
  let delivery: MemoryDelivery | undefined;
  const watched = <T extends object>(port: T): T =>
    new Proxy(port, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          activity++;
          const out = (value as (...a: unknown[]) => unknown).apply(target, args);
          const after = () => {
            activity++;
            delivery?.sync();
          };
          if (out instanceof Promise) return out.finally(after);
          after();
          return out;
        };
      },
    });
  const live = {
    store: watched(ports.store),
    queue: watched(ports.queue),
    scheduler: watched(ports.scheduler),
    journal: watched(ports.journal),
    graph: watched(ports.graph),
    flow: watched(ports.flow),
    pacer: watched(ports.pacer),
    debouncer: watched(ports.debouncer),
    control: watched(ports.control),
    schedules: watched(ports.schedules),
    eventWaits: watched(ports.eventWaits),
  };

  const who = localAccess(options);
  const api = createApiHandler({
    access: who.access,
    config,
    catalog,
    store: live.store,
    queue: live.queue,
    scheduler: live.scheduler,
    clock,
    logger,
    controlPlane: {
      index: watched(ports.index),
      control: live.control,
      deadLetters: watched(ports.deadLetters),
      redrives: watched(ports.redrives),
    },
    flow: live.flow,
    pacer: live.pacer,
    debouncer: live.debouncer,
    graph: live.graph,
    journal: live.journal,
    eventWaits: live.eventWaits,
    schedules: { store: live.schedules, trigger: watched(ports.trigger) },
    ...(options.metrics ? { metrics: options.metrics } : {}),
  });

  const workers: MemoryPlatform['workers'] = {};
  const routes = options.jobs.map((job) => {
    const { spec } = job;
    const worker = createWorker(job, {
      config,
      store: live.store,
      queue: live.queue,
      scheduler: live.scheduler,
      clock,
      ...(timer ? { timer } : {}),
      logger,
      schedules: live.schedules,
      graph: live.graph,
      ...(spec.concurrency || spec.singleton ? { flow: live.flow } : {}),
      ...(spec.singleton?.mode === 'cancel-running' ? { control: live.control } : {}),
      ...(spec.throttle ? { pacer: live.pacer } : {}),
      ...(spec.debounce ? { debouncer: live.debouncer } : {}),
      journal: live.journal,
      eventWaits: live.eventWaits,
      // ctx.emit: the API's events service, in the worker's process, as a deployed worker runs it
      events: createEventSender(
        {
          config,
          catalog,
          store: live.store,
          queue: live.queue,
          scheduler: live.scheduler,
          clock,
          log: logger,
          flow: live.flow,
          pacer: live.pacer,
          debouncer: live.debouncer,
          graph: live.graph,
          journal: live.journal,
          eventWaits: live.eventWaits,
        },
        `job:${spec.type}`,
      ),
      ...(options.metrics ? { metrics: options.metrics } : {}),
      ...options.worker,
    });
    workers[spec.type] = worker;
    const route = config.routes[spec.type];
    if (!route?.dlqUrl) throw new Error(`no route for job type ${spec.type}`);
    const lambdaTimeout = lambdaTimeoutSeconds(spec.timeoutMs);
    const visibility =
      typeof options.visibilityTimeoutSeconds === 'number'
        ? options.visibilityTimeoutSeconds
        : options.visibilityTimeoutSeconds?.[spec.type];
    return {
      queueUrl: route.queueUrl,
      queueArn: route.queueArn,
      dlqUrl: route.dlqUrl,
      functionName: `${naming.prefix}-${spec.type}`,
      handler: worker,
      visibilityTimeoutSeconds: visibility ?? visibilityTimeoutSeconds(lambdaTimeout),
      timeoutMs: lambdaTimeout * 1000,
    };
  });
  const loop = new MemoryDelivery({
    queue: ports.queue,
    scheduler: ports.scheduler,
    deadLetters: ports.deadLetters,
    clock,
    routes,
    maxReceiveCount,
    batchSize: options.runner?.batchSize ?? 10,
    maxConcurrency: options.runner?.maxConcurrency ?? 4,
    auto: options.autoDeliver ?? true,
  });
  delivery = loop;

  const server = await startFunctionUrlServer({ handler: api, port: options.port ?? 0, ...who.functionUrl });

  const log = logger.child({ component: 'supervisor' });
  let passes: Promise<unknown> = Promise.resolve();
  const supervise = (): Promise<SupervisorReport> => {
    const pass = passes.then(() =>
      runSupervisorOnce(
        {
          config,
          index: ports.dueIndex,
          jobs: live.store,
          schedules: live.schedules,
          queue: live.queue,
          scheduler: live.scheduler,
          log,
          graph: live.graph,
          ...(options.supervisor ? { options: options.supervisor } : {}),
        },
        clock.now(),
      ),
    );
    passes = pass.catch(() => undefined);
    return pass;
  };

  /**
   * Delivers what is due and waits: until nothing is due and no invocation runs, or (unless
   * `strict`) until no port was called for {@link QUIET_MS} (the handlers that run wait on the clock).
   */
  async function settle(strict: boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let seen = activity;
    let quietSince = Date.now();
    for (;;) {
      loop.pump();
      const { running, due } = loop.state();
      if (running === 0 && due === 0) {
        // continuations already queued (a send after the last write) run before this counts as idle
        await new Promise((resolve) => setImmediate(resolve));
        loop.pump();
        const after = loop.state();
        if (after.running === 0 && after.due === 0 && activity === seen) return;
      }
      if (activity !== seen) {
        seen = activity;
        quietSince = Date.now();
      } else if (!strict && Date.now() - quietSince >= QUIET_MS) {
        return;
      }
      if (Date.now() > deadline) {
        const jobs = loop.runningJobs();
        throw new Error(
          `the in-memory platform is not idle after ${timeoutMs} ms: ${running} invocation(s) still run` +
            `${jobs.length > 0 ? ` (jobs ${jobs.join(', ')})` : ''}, ${due} message(s) due.` +
            (timer ? ' A handler waiting for its timeout on the ManualClock needs advance().' : ''),
        );
      }
      await Promise.race([loop.anyInvocation(), new Promise((resolve) => setTimeout(resolve, 1))]);
    }
  }

  return {
    url: server.url,
    config,
    clock,
    api,
    workers,
    ports,
    delivery: loop,
    supervise,
    runUntilIdle: ({ timeoutMs = 5_000 } = {}) => settle(true, timeoutMs),
    async advance(ms) {
      if (!isManual(clock)) {
        throw new Error('advance() needs the platform to run on a ManualClock (the default); this one runs on another');
      }
      if (!Number.isFinite(ms) || ms < 0)
        throw new RangeError(`advance() takes a duration of 0 ms or more (got ${ms})`);
      const target = clock.now() + ms;
      for (;;) {
        await settle(false, 5_000);
        const now = clock.now();
        const times = [loop.state().next, timer?.next()].filter((t): t is number => t !== undefined && t > now);
        const next = times.length > 0 ? Math.min(...times) : undefined;
        if (next === undefined || next > target) break;
        clock.set(next);
      }
      if (clock.now() < target) clock.set(target);
      await settle(false, 5_000);
    },
    async stop() {
      // handlers still waiting on the clock for their timeout get it now, so that they end
      timer?.fireAll();
      const left = await loop.stop();
      if (left.length > 0) logger.warn('stopped with handlers still running', { jobs: left });
      await passes;
      await server.stop();
      timer?.dispose();
    },
  };
}
