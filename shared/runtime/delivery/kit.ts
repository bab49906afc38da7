import { randomUUID } from 'node:crypto';
import type { SQSRecord } from 'aws-lambda';
import type { PlatformConfig, Route } from '../../config';
import type { BlobStore } from '../../core/blobs';
import { type Clock, systemClock, systemTimer, type Timer } from '../../core/clock';
import type { JobControl } from '../../core/control-ports';
import type { Debouncer } from '../../core/debounce';
import type { JobGraph } from '../../core/dependencies';
import type { EventWaits } from '../../core/event-waits';
import type { EventSender } from '../../core/events';
import type { FlowSlots } from '../../core/flow';
import type { Journal } from '../../core/journal';
import { DEFAULT_LEASE_MS, MIN_LEASE_MS } from '../../core/lease';
import { fairQueueTypes } from '../../core/message-group';
import { type Metrics, noMetrics } from '../../core/metrics';
import type { Pacer } from '../../core/pace';
import type { JobQueue, JobScheduler, JobStore } from '../../core/ports';
import { type DispatchDeps, handOffOf } from '../../dispatch/dispatch';
import type { InvokeDeps } from '../../dispatch/invoke';
import { createRelease, releaseDepsOf } from '../../dispatch/release';
import { ConfigError } from '../../errors';
import type { CostMeter } from '../../lambda/cost-meter';
import { createLogger, type Logger } from '../../logger';
import type { ScheduleStore } from '../../schedules/ports';
import { codeVersionOf } from '../code-version';
import type { JobContext, JobDefinition } from '../job-definition';

/**
 * Calls the job's handler for one claimed attempt: `def.run`, or a batch handler's share of a
 * call it makes for many records (../batch-worker.ts).
 */
export type HandlerCall = (payload: unknown, ctx: JobContext, record: SQSRecord) => Promise<unknown>;

/**
 * Told, as soon as a delivery knows it, that the record will not call the handler (its claim
 * refused, its job held by a gate or given back, its payload invalid), before the bookkeeping
 * that follows (an onFailure hook, a release, a skip): a batch worker calls its handler once no
 * record may still reach it, and must not keep the claimed items waiting for that bookkeeping.
 */
export type NoCall = (record: SQSRecord) => void;

/** Dependencies of a worker. The Lambda entry builds them from the environment. */
export interface WorkerDeps {
  config: PlatformConfig;
  store: JobStore;
  queue: JobQueue;
  /** Takes retries whose delay exceeds MAX_VISIBILITY_DELAY_MS (11 h 40 min: a received message's longest visibility). */
  scheduler?: JobScheduler;
  /** @default systemClock */
  clock?: Clock;
  /** What fires an attempt's timeout (`timeoutMs` after it starts). @default systemTimer (real time) */
  timer?: Timer;
  /** Randomness for backoff jitter. @default Math.random */
  random?: () => number;
  /** Lease owner id. @default a random id per worker instance */
  owner?: string;
  /** Lease length; at least {@link MIN_LEASE_MS}, and ≥ 10 × the p99 latency of a conditional write. @default 30_000 */
  leaseMs?: number;
  logger?: Logger;
  /** Recurring schedules, for fire messages (see ../fire.ts). Without it a fire returns to the queue. */
  schedules?: ScheduleStore;
  /** Concurrency slots; required when the job type has `concurrency` limits or a `singleton`. */
  flow?: FlowSlots;
  /** Cancels jobs; required for a `cancel-running` singleton (it cancels the job it replaces). */
  control?: Pick<JobControl, 'cancel'>;
  /** Throttle state; required when the job type has a `throttle`. */
  pacer?: Pacer;
  /** Debounce windows; required when the job type has a `debounce` (a started run closes its window). */
  debouncer?: Debouncer;
  /**
   * The jobs' journals and signal inboxes: what `ctx.step`, `ctx.sleep` and `ctx.waitForSignal`
   * record. Without it, a handler that calls them fails. @default none
   */
  journal?: Journal;
  /**
   * The match index of event waits: what `ctx.waitForEvent` registers in and looks at. Without
   * it, a handler that calls it fails. @default none
   */
  eventWaits?: EventWaits;
  /**
   * What `ctx.emit` sends events through (the API's events service: its checks and fan-out).
   * Without it, a handler that calls it fails. @default none
   */
  events?: EventSender;
  /** Where the job metrics go (started, succeeded, ..., queue delay, run duration, cost). @default noMetrics */
  metrics?: Metrics;
  /**
   * Attributes the AWS requests of the clients behind the ports to each record (the clients must
   * report to it: `createAwsClients({ cost: meter })`). With it, the writes that end an attempt
   * record the job's cost, and each delivery's cost is a metric. @default no cost is recorded
   */
  meter?: CostMeter;
  /**
   * Job dependencies (`dependsOn`): with it, a job that ends releases its children, and handlers
   * can read `ctx.parents()`. @default no release is run (a job with children leaves them
   * waiting), and `ctx.parents()` rejects with a ConfigError
   */
  graph?: JobGraph;
  /**
   * The payload bucket (shared/core/blobs.ts): with it, an offloaded payload, step result or
   * signal is read back before the handler sees it, and a result or step result over its inline
   * limit (64 KiB) is offloaded, up to MAX_BLOB_BYTES. @default none: such values are refused
   */
  blobs?: BlobStore;
}

/**
 * What every stage of a delivery shares: the job definition, the ports, the defaults resolved
 * once, and the few services several stages call (the release of a job that ended, the cost
 * spent so far). Built once per worker by {@link createKit}.
 */
export interface WorkerKit {
  readonly def: JobDefinition;
  /** The code version its journal entries record (`codeVersionOf`). */
  readonly version: string;
  readonly deps: WorkerDeps;
  /** Runs the handler for one claimed attempt. @default `def.run` */
  readonly call: HandlerCall;
  /** Told that a record's delivery will not call the handler. @default nothing is told */
  readonly noCall: NoCall;
  readonly type: string;
  readonly route: Route;
  readonly clock: Clock;
  readonly timer: Timer;
  readonly random: () => number;
  /** This worker's lease owner prefix; each claim adds a suffix of its own. */
  readonly owner: string;
  readonly leaseMs: number;
  readonly log: Logger;
  readonly metrics: Metrics;
  /** The status item's TTL for a write at `now` (epoch seconds). */
  expiresAt(now: number): number;
  /** What the current delivery spent so far, for the write that ends its attempt (nothing without a meter). */
  spent(): { cost?: ReturnType<CostMeter['current']> };
  /** The hand-off's deps (shared/dispatch/dispatch.ts): the deployment's queues, and the scheduler when there is one. */
  readonly handOff: DispatchDeps;
  /** The release of ended jobs' children; undefined without a job graph. */
  readonly release: ReturnType<typeof createRelease> | undefined;
  /** What `ctx.invoke` starts children and resumes with; undefined without a job graph. */
  readonly invokeDeps: InvokeDeps | undefined;
  /** Runs the release of a job that ended; throws when it failed, so the message comes back. */
  releaseAfterEnd(jobId: string, log: Logger): Promise<void>;
}

/** Resolves a worker's defaults and checks what needs no job type feature (its route, its lease). */
export function createKit(def: JobDefinition, deps: WorkerDeps, call?: HandlerCall, noCall?: NoCall): WorkerKit {
  const leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS;
  if (!Number.isFinite(leaseMs) || leaseMs < MIN_LEASE_MS) {
    throw new ConfigError(
      `leaseMs must be at least ${MIN_LEASE_MS} ms (got ${leaseMs}): shorter leases expire before their first heartbeat`,
    );
  }
  const route = deps.config.routes[def.spec.type];
  if (!route) throw new ConfigError(`no route configured for job type "${def.spec.type}"`);
  const clock = deps.clock ?? systemClock;
  // Its own type's messages carry a group when its spec says so; another type's (a child it releases) do not:
  // the worker does not know that type's spec.
  const fairQueues = fairQueueTypes([def.spec]);
  const releaseDeps = deps.graph
    ? releaseDepsOf({
        config: deps.config,
        graph: deps.graph,
        queue: deps.queue,
        scheduler: deps.scheduler,
        fairQueues,
      })
    : undefined;
  const release = releaseDeps ? createRelease(releaseDeps, clock) : undefined;
  const meter = deps.meter;
  return {
    def,
    version: codeVersionOf(def),
    deps,
    call: call ?? ((payload, ctx) => def.run(payload, ctx)),
    noCall: noCall ?? (() => {}),
    type: def.spec.type,
    route,
    clock,
    timer: deps.timer ?? systemTimer,
    random: deps.random ?? Math.random,
    owner: deps.owner ?? `worker-${randomUUID()}`,
    leaseMs,
    log: (deps.logger ?? createLogger({ level: deps.config.logLevel })).child({ type: def.spec.type }),
    metrics: deps.metrics ?? noMetrics,
    expiresAt: (now) => Math.floor(now / 1000) + deps.config.retentionDays * 86_400,
    spent: () => (meter ? { cost: meter.current() } : {}),
    handOff: handOffOf(deps.config, deps.queue, deps.scheduler, fairQueues),
    release,
    invokeDeps: releaseDeps ? { ...releaseDeps, store: deps.store } : undefined,
    async releaseAfterEnd(jobId, log) {
      if (release && !(await release.afterEnd(jobId, log))) throw new Error(`the release of job ${jobId} failed`);
    },
  };
}
