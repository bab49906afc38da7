import type { BlobStore } from '../../core/blobs';
import { pastRetention } from '../../core/control';
import type { Debouncer } from '../../core/debounce';
import type { JobGraph } from '../../core/dependencies';
import type { FlowSlots } from '../../core/flow';
import type { JobTypeSpec } from '../../core/job-type';
import { fairQueueTypes } from '../../core/message-group';
import type { Metrics } from '../../core/metrics';
import type { Pacer } from '../../core/pace';
import { handOffOf } from '../../dispatch/dispatch';
import { createLineKeeper, type LineKeeper } from '../../dispatch/line-keeper';
import { type ReleaseDeps, releaseDepsOf } from '../../dispatch/release';
import { ConfigError } from '../../errors';
import type { ApiServiceDeps } from '../service-deps';

export interface JobsServiceDeps extends ApiServiceDeps {
  /** Rate-limit state; required when a job type has a `rateLimit`. */
  pacer?: Pacer;
  /** Debounce windows; required when a job type has a `debounce`. */
  debouncer?: Debouncer;
  /** Counts the jobs created (`JobsEnqueued`). @default nothing is counted */
  metrics?: Metrics;
  /** Job dependencies; required for an enqueue with `dependsOn`. @default `dependsOn` is refused (400) */
  graph?: JobGraph;
  /**
   * Concurrency slots: a new job of a type with a ranked line takes its place, or joins its line,
   * at enqueue (see ./line.ts). @default every job is sent, and does either on its delivery
   */
  flow?: FlowSlots;
  /**
   * The payload bucket (shared/core/blobs.ts): with it, a payload over 256 KiB is kept there and
   * `payloadRef` (an upload) is accepted. @default none: such payloads are refused (413, 400)
   */
  blobs?: BlobStore;
}

/** What the API itself adds to an enqueue request (never read from the caller's body). */
export interface EnqueueOptions {
  /** The recurring schedule the job is a run of (`POST /schedules/{name}/run`). @default none */
  schedule?: string;
  /** Who enqueues (the caller's ARN): kept on the job item by the same write. @default not recorded */
  by?: string;
  /**
   * Parents written by the same request (a flow) that registered this job as their child when
   * they were created: each counts as not finished, and the job does not register with it.
   * @default none
   */
  sameRequest?: ReadonlySet<string>;
  /** Children registered with this job at its creation (a flow's `putChildren`). @default none */
  childCount?: number;
  /**
   * The caller compared an existing job of this id with the request's parents already (a flow
   * checks all its jobs before it writes any), so the write does not read its parents again.
   * @default false
   */
  parentsChecked?: boolean;
  /**
   * Whether a job of a ranked line takes its place at enqueue (./line.ts). A request that writes
   * more after this job and may fail before it sends its messages (a flow: later levels, its
   * record) passes false: a place taken for a job whose message is never sent would hold up the
   * line. @default true
   */
  placeAtEnqueue?: boolean;
  /**
   * The job is one an event makes (`POST /events`): its id has the shape of an event's job id,
   * which any other enqueue is refused. @default false
   */
  fromEvent?: boolean;
  /**
   * The time (epoch ms) the job is created at, hence its incarnation: a flow fixes it for all its
   * jobs up front, and writes the registry of a parent it creates under that incarnation, naming
   * its children's, before it writes the parent and them. @default the clock's now
   */
  at?: number;
}

/** The service's ports and its catalog by type: what each part of an enqueue is given. */
export interface EnqueueContext {
  deps: JobsServiceDeps;
  specs: ReadonlyMap<string, JobTypeSpec>;
  /** The catalog's types whose messages carry an SQS message group (`fairQueueTypes`). */
  fairQueues: ReadonlySet<string>;
  /** Hands places on and looks at holders, for the jobs that take their place at enqueue (with `deps.flow`). */
  keeper?: LineKeeper;
}

/** The context of a service over `deps`; refuses a catalog whose limits need a port it lacks. */
export function enqueueContext(deps: JobsServiceDeps): EnqueueContext {
  const limited = deps.catalog.find((spec) => spec.rateLimit);
  if (limited && !deps.pacer) {
    throw new ConfigError(`job type "${limited.type}" has a rate limit: the API needs its pacer`);
  }
  const debounced = deps.catalog.find((spec) => spec.debounce);
  if (debounced && !deps.debouncer) {
    throw new ConfigError(`job type "${debounced.type}" has a debounce: the API needs its debouncer`);
  }
  const fairQueues = fairQueueTypes(deps.catalog);
  const { flow, store, clock } = deps;
  const handOff = handOffOf(deps.config, deps.queue, deps.scheduler, fairQueues);
  return {
    deps,
    specs: new Map(deps.catalog.map((spec) => [spec.type, spec])),
    fairQueues,
    ...(flow ? { keeper: createLineKeeper({ slots: flow, store, handOff, clock }) } : {}),
  };
}

/** The release's dependencies (the graph is required: only jobs with dependencies need them). */
export function releaseDeps({ deps, fairQueues }: EnqueueContext): ReleaseDeps {
  const graph = deps.graph;
  if (!graph) throw new ConfigError('job dependencies need the job graph');
  return releaseDepsOf({ config: deps.config, graph, queue: deps.queue, scheduler: deps.scheduler, fairQueues });
}

/** Whether a job `id` exists and is retained: an enqueue with that id is then a replay (`create` reuses one past its retention). */
export async function exists({ deps }: EnqueueContext, id: string, now: number): Promise<boolean> {
  const job = await deps.store.get(id);
  return job !== undefined && !pastRetention(job, now);
}

/** When a job that finished at `now` may be deleted (epoch seconds). */
export function finishedExpiresAt({ deps }: EnqueueContext, now: number): number {
  return Math.floor(now / 1000) + deps.config.retentionDays * 86_400;
}
