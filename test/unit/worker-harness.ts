/** Shared set-up for the worker tests: a worker on in-memory ports, a manual clock and captured logs. */

import { z } from 'zod';
import { SignalsService } from '../../shared/api/signals-service';
import type { BlobStore } from '../../shared/core/blobs';
import { ManualClock, type Timer } from '../../shared/core/clock';
import type { JobGraph } from '../../shared/core/dependencies';
import type { EventWaits } from '../../shared/core/event-waits';
import type { EventSender } from '../../shared/core/events';
import type { Job } from '../../shared/core/job';
import { defineJobType, type JobTypeSpec } from '../../shared/core/job-type';
import type { JobStore } from '../../shared/core/ports';
import type { CostMeter } from '../../shared/lambda/cost-meter';
import { createLogger } from '../../shared/logger';
import type { GateBuilder } from '../../shared/runtime/gates';
import type { FailureInfo, JobDefinition, JobHandler } from '../../shared/runtime/job-definition';
import { createWorker } from '../../shared/runtime/worker';
import { FakeJobControl } from '../support/control-fakes';
import {
  captureLogs,
  FakeJobQueue,
  FakeJobScheduler,
  FakeJobStore,
  MemoryMetrics,
  newJob,
  sqsEvent,
  sqsRecord,
  testConfig,
} from '../support/fakes';
import { FakeDebouncer, FakeFlowSlots, FakePacer } from '../support/flow-fakes';
import { FakeJournal } from '../support/journal-fake';

export const T0 = Date.parse('2026-03-01T12:00:00.000Z');
export const ISO0 = '2026-03-01T12:00:00.000Z';
export const QUEUE_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/orrery-echo';
/** `expiresAt` of a job finished at T0 with the default 30-day retention. */
export const EXPIRES_AT = Math.floor(T0 / 1000) + 30 * 86_400;

/** `echo`: payload `{ n: number }`, 3 attempts, a constant 2 s backoff, a 1 s timeout. */
export const echoSpec = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number() }),
  timeoutMs: 1000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
});

/** `echo` with one place for the whole type (a concurrency limit of 1). */
export const oneAtATimeSpec = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number() }),
  timeoutMs: 1000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
  concurrency: [{ limit: 1 }],
});

/** {@link oneAtATimeSpec} with priorities: a 30 s head start per step. */
export const rankedSpec = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number() }),
  timeoutMs: 1000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
  concurrency: [{ limit: 1 }],
  priority: { default: 0, agingSeconds: 30 },
});

export interface HarnessOptions {
  run?: JobHandler<unknown>;
  onFailure?: (payload: unknown, info: FailureInfo) => Promise<void>;
  spec?: JobTypeSpec;
  leaseMs?: number;
  random?: () => number;
  /** Give the worker a scheduler for retry delays over 12 h. @default false */
  withScheduler?: boolean;
  /** Attributes the ports' requests to records (a store that reports to it, e.g. {@link meteredStore}). */
  meter?: CostMeter;
  /** The echo route's maxReceiveCount (the worker counts what it dead-letters). @default none */
  maxReceiveCount?: number;
  /** What fires the attempts' timeouts. @default the worker's (real time) */
  timer?: Timer;
  /** The worker's gate list. @default STANDARD_GATES */
  gates?: readonly GateBuilder[];
  /** The job graph `ctx.parents()` reads. @default none */
  graph?: JobGraph;
  /** The match index `ctx.waitForEvent` registers in. @default none */
  eventWaits?: EventWaits;
  /** What `ctx.emit` sends through. @default none */
  events?: EventSender;
  /** The payload bucket (offloaded values). @default none */
  blobs?: BlobStore;
  /** The definition's code version (`JobOptions.version`). @default derived from `run` */
  version?: string;
}

export function harness(options: HarnessOptions = {}) {
  const store = new FakeJobStore();
  const queue = new FakeJobQueue();
  const scheduler = new FakeJobScheduler();
  const clock = new ManualClock(T0);
  const logs = captureLogs();
  const flow = new FakeFlowSlots();
  const control = new FakeJobControl(store);
  const pacer = new FakePacer();
  const debouncer = new FakeDebouncer();
  const metrics = new MemoryMetrics();
  const journal = new FakeJournal();
  // a route for the spec's type too, when it is not echo's
  const config = testConfig([...new Set(['echo', (options.spec ?? echoSpec).type])]);
  if (options.maxReceiveCount !== undefined && config.routes.echo)
    config.routes.echo.maxReceiveCount = options.maxReceiveCount;
  const def: JobDefinition = {
    spec: options.spec ?? echoSpec,
    run: options.run ?? (async (payload) => payload),
    onFailure: options.onFailure,
    ...(options.version ? { version: options.version } : {}),
  };
  const worker = createWorker(
    def,
    {
      config,
      store: options.meter ? meteredStore(store, options.meter) : store,
      queue,
      ...(options.withScheduler ? { scheduler } : {}),
      ...((options.spec ?? echoSpec).concurrency || (options.spec ?? echoSpec).singleton ? { flow } : {}),
      ...((options.spec ?? echoSpec).singleton?.mode === 'cancel-running' ? { control } : {}),
      ...((options.spec ?? echoSpec).throttle ? { pacer } : {}),
      ...((options.spec ?? echoSpec).debounce ? { debouncer } : {}),
      clock,
      journal,
      ...(options.graph ? { graph: options.graph } : {}),
      ...(options.eventWaits ? { eventWaits: options.eventWaits } : {}),
      ...(options.events ? { events: options.events } : {}),
      ...(options.blobs ? { blobs: options.blobs } : {}),
      owner: 'worker-test',
      random: options.random ?? (() => 0.5),
      ...(options.leaseMs ? { leaseMs: options.leaseMs } : {}),
      ...(options.timer ? { timer: options.timer } : {}),
      logger: createLogger({ level: 'debug', sink: logs.sink }),
      metrics,
      ...(options.meter ? { meter: options.meter } : {}),
    },
    options.gates,
  );
  return {
    store,
    queue,
    scheduler,
    flow,
    control,
    pacer,
    debouncer,
    journal,
    clock,
    logs: logs.lines,
    metrics,
    worker,
  };
}

/** A queued echo job with no attempt yet. */
export function echoJob(id: string, overrides: Partial<Job> = {}): Job {
  return newJob({ id, type: 'echo', payload: { n: 1 }, ...overrides }, T0);
}

/** The SQS record for a job message of `id`, message id `m-<id>` unless given. */
export function messageFor(id: string, options: { messageId?: string; type?: string; receiveCount?: number } = {}) {
  return sqsRecord(
    { v: 1, id, type: options.type ?? 'echo' },
    { messageId: options.messageId ?? `m-${id}`, receiveCount: options.receiveCount ?? 1 },
  );
}

let redeliveries = 0;
/** A later delivery of the job's message: an event with a new SQS message id each time. */
export function redelivery(id: string) {
  return sqsEvent(messageFor(id, { messageId: `m-${id}-${++redeliveries}` }));
}

/** Log lines whose message is `message`. */
export function logged(lines: Record<string, unknown>[], message: string): Record<string, unknown>[] {
  return lines.filter((line) => line.message === message);
}

/**
 * `store`, each of whose calls reports one request and one write unit (a write) to `meter`, as
 * the metered SDK clients do for the DynamoDB adapter.
 */
export function meteredStore(store: JobStore, meter: CostMeter): JobStore {
  const reads = new Set<string | symbol>(['get']);
  return new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        meter.record({ requests: 1, writeUnits: reads.has(name) ? 0 : 1 });
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** The signals API (`POST /jobs/{id}/signals/{name}`) over a harness's fakes, for the `echo` type. */
export function signalsOf(h: ReturnType<typeof harness>, log = createLogger({ level: 'error' })): SignalsService {
  return new SignalsService({
    config: testConfig(['echo']),
    catalog: [],
    store: h.store,
    journal: h.journal,
    queue: h.queue,
    clock: h.clock,
    log,
  });
}

/** A handler that runs until `release(id)` is called, recording the order jobs started in. */
export function gated() {
  const open = new Map<string, () => void>();
  const started: string[] = [];
  return {
    started,
    run: async (_p: unknown, ctx: { jobId: string }) => {
      started.push(ctx.jobId);
      await new Promise<void>((resolve) => open.set(ctx.jobId, resolve));
      return 'ok';
    },
    release: (id: string) => open.get(id)?.(),
    /** Waits until `id` has started; throws if it does not. */
    async until(id: string) {
      for (let i = 0; i < 500 && !started.includes(id); i++) await new Promise((r) => setTimeout(r, 1));
      if (!started.includes(id)) throw new Error(`${id} never started`);
    },
  };
}
