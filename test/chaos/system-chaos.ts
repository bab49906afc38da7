/**
 * System chaos run: drives Orrery the way its users and AWS do, and checks its promises.
 *
 * - Producers enqueue through the typed client (short timeouts, retries with the same id),
 *   singly and in batches, while the API's DynamoDB, SQS and Scheduler calls are slow (longer
 *   than the client's timeout), fail, or lose their responses.
 * - Controllers cancel, then retry, jobs that are queued, running, retrying or scheduled; copies
 *   of job messages are put into the DLQ and redriven through the API; duplicates are sent.
 * - Jobs are due now, after an SQS delay (short, and up to 15 min), or via Scheduler (> 15 min);
 *   backoffs go up to > 12 h; recurring schedules run under every overlap policy; workers are
 *   killed; each worker's clock is skewed by a fixed offset in [-1 s, +1 s]; two supervisors
 *   run at once; the Scheduler stand-in drops, delays and duplicates fires.
 *
 * Time: one driven clock (real time + an offset) is shared by the API, the workers (plus their
 * skew), the supervisors and the Scheduler stand-in. The run first works in real time; then,
 * in cycles, it stops the runners and supervisors, waits until no lease is held, jumps the
 * clock forward, lets the Scheduler stand-in fire and the supervisors repair, and resumes.
 * SQS delays and visibility stay real time: messages hidden for hours must be recovered by the
 * supervisor. Beside the plain job types run flow-controlled ones (system-flow.ts): a concurrency
 * limit, singletons of every mode sharing one scope, a throttle (an operator slows its burst's
 * key and removes that through the API), a rate limit and a debounce; a fair limit shared by
 * tenants, whose limit an operator lowers and removes mid-run (system-fair.ts, system-limits.ts);
 * and
 * workflows (system-workflows.ts): steps, sleeps, signals sent before, during, in the last second
 * of and after a wait, API calls killed between two of their writes, and, once the driven clock
 * is past their retention, their ids reused by new jobs; events that make one job per subscriber
 * (system-events.ts); and parents that invoke children, jobs that wait for an event, and a batch
 * type (system-compose.ts). See system-checks.ts for the invariants.
 */
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { DynamoFlowSlots } from '../../shared/aws/dynamo-flow-slots';
import { createClient } from '../../shared/client/index';
import type { Job } from '../../shared/core/job';
import { WAKE_GRACE_MS } from '../../shared/core/job-slots';
import { LATE_TURN_MS, paceScope } from '../../shared/core/pace';
import { isSettled, isTerminal } from '../../shared/core/states';
import type { BatchJobDefinition } from '../../shared/runtime/batch-worker';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import type { Schedule } from '../../shared/schedules/model';
import { DeadZones, FaultInjector } from '../support/faults';
import { gcraExcess } from '../support/gcra';
import { type ProbePayload, ProbeTracker, probeJob } from '../support/probes';
import { seeded } from './seeded';
import { Actors } from './system-actors';
import { type CheckResult, checkInvariants, INVARIANTS, type SystemViolation } from './system-checks';
import { ComposeActors, ComposeRecords, type PlannedComposition, planCompositions } from './system-compose';
import { EVENT_TYPE, type EventsInput, planEvents, SYSTEM_EVENT_SUBSCRIPTION } from './system-events';
import { assignTenants, FAIR_LIMIT, FAIR_TYPE, fairConcurrency, fairLine, fairWeight } from './system-fair';
import {
  CHAOS_RUNTIME_THROTTLE,
  flowTypes,
  type PacedType,
  pacedTypes,
  SINGLETON_SCOPE,
  singletonLines,
} from './system-flow';
import {
  apiHandOns,
  changeLimitMidRun,
  changeThrottleMidRun,
  type LimitChange,
  type PaceChange,
  pacePeriods,
} from './system-limits';
import { SystemObserver, type Turn } from './system-observer';
import { DIAMOND_JOBS, type PlannedJob, planDiamonds, planSystem } from './system-plan';
import {
  type CycleRecord,
  checkWorkflows,
  type PlannedWorkflow,
  planReuse,
  planWorkflows,
  WORKFLOW_KINDS,
  WorkflowActors,
  WorkflowRecords,
} from './system-workflows';
import { startWorld, type World } from './system-world';

export interface SystemChaosOptions {
  /** @default 10_000 */
  jobs: number;
  /** @default Date.now() based */
  seed: number;
  /** Job types for plain jobs (a further one runs the recurring schedules). @default 2 */
  types: number;
  /** @default 3 */
  runnersPerQueue: number;
  /** @default 4 */
  maxConcurrency: number;
  /** @default 10 */
  batchSize: number;
  /** @default 3000 */
  leaseMs: number;
  /** @default 5 */
  visibilitySeconds: number;
  /** @default 6000 */
  timeoutMs: number;
  /** Recurring schedules. @default 9 */
  schedules: number;
  /** Driven time the run covers; Scheduler delays up to half of it, `days` backoffs (> 12 h) up to 80 % of it. @default 20 h */
  horizonMs: number;
  /** Clock jumps: between these (driven ms). @default 3 h – 4 h */
  jumpMinMs: number;
  jumpMaxMs: number;
  /** Client timeout per attempt; API latency faults exceed it. @default 1000 */
  clientTimeoutMs: number;
  /** The typed client's retries per call (then the producer retries with the same id). @default 3 */
  clientRetries: number;
  apiFaultRate: number;
  apiEscapeRate: number;
  apiLatencyRate: number;
  workerFaultRate: number;
  workerEscapeRate: number;
  killRate: number;
  duplicateRate: number;
  controlRate: number;
  dlqCopyRate: number;
  batchShare: number;
  /**
   * The share of the first plain type's eligible jobs (due now, succeeding, no cancel, burst,
   * line or flow) made by an event instead (system-events.ts), each with a sibling job of the
   * event's second subscriber. @default 0.3
   */
  eventShare: number;
  /**
   * The share of the first plain type's eligible jobs (as for events, among those no event made)
   * turned into invoking parents, event waiters and batch items, in turn (system-compose.ts),
   * checked by invariants 21 to 23; at least 6 of them when above 0. @default 0.1
   */
  composeShare: number;
  fireDropRate: number;
  fireDelayRate: number;
  fireDuplicateRate: number;
  /** @default 1000 */
  maxSkewMs: number;
  /** @default 32 */
  producers: number;
  /** @default 2000 */
  supervisorIntervalMs: number;
  /** Real time without change that counts as settled. @default 3000 */
  settleMs: number;
  /** Hidden messages that come back within this much real time are waited for when settling. @default 8000 */
  soonMs: number;
  /** Most minute buckets one supervisor pass reads (SupervisorOptions.maxMinutesPerRun). @default 240 */
  supervisorMaxMinutes: number;
  /** Escaping faults on the supervisors' calls. */
  supervisorEscapeRate: number;
  /** Real time the run may take (its 12,000 jobs took 15–20 min on 2 cores). @default 30 min */
  deadlineMs: number;
  /**
   * The last plain type gets a concurrency limit of `limit` per key, over `keys` keys (0: no limit),
   * checked by invariant 8. `keys` by default: one per 100 jobs, at least 8 (so lines form in a
   * small run, and a large one still drains within its deadline). @default { limit: 2 }
   */
  flow: { limit: number; keys?: number };
  /**
   * Flow-controlled jobs, as a share of `jobs` (planned beside them, with draws of their own):
   * singletons of every mode sharing a scope, a throttle, a rate limit and a debounce (see
   * system-flow.ts), checked by invariants 8 to 11. @default 0.2
   */
  flowShare: number;
  /**
   * Jobs of the fair type (system-fair.ts: a limit shared fairly between tenants, one noisy),
   * checked by invariant 18; the limit of one of its keys is lowered mid-run and removed again
   * through the API (system-limits.ts), checked by invariant 19. 0 for none.
   * @default 2 % of `jobs`, at least 40
   */
  fairJobs?: number;
  /** Share of the jobs created in flows (`POST /flows`): diamonds A → (B, C) → D of a plain type. @default 0.02 */
  dagShare: number;
  /**
   * Workflow units (system-workflows.ts: steps, sleeps, signals at every moment of a wait, API
   * calls killed between their writes, ids reused after retention); 0 for none.
   * @default 1.5 % of `jobs`, at least 2 of each kind (24)
   */
  workflows?: number;
  dynamodbEndpoint?: string;
  progress?: (line: string) => void;
}

/**
 * The probe types' timeout: a handler the plan holds (a cancel aimed at a running attempt, the
 * holder of a planned line) is held until the cancel or the line's followers have come, which
 * on a loaded machine can take longer than the run's `timeoutMs` (its long jobs are sized by it).
 */
const HELD_TIMEOUT_MS = 45_000;

/** Real time kept at the end of a run for its two closing cycles and the checks. */
const CLOSING_RESERVE_MS = 60_000;
/** Real time one cycle of jump, fire, supervise and settle takes at most on a busy machine. */
const ONE_CYCLE_RESERVE_MS = 30_000;
/** Real time kept for the workflows' second round: the jump past retention, and its real-time phase. */
const REUSE_RESERVE_MS = 60_000;
/**
 * Days a finished job is kept in a run with workflows: the least allowed, so that their ids can be
 * reused once the driven clock is a day past their end.
 */
const RETENTION_DAYS = 1;

export const DEFAULT_SYSTEM_CHAOS: Omit<SystemChaosOptions, 'seed'> = {
  jobs: 10_000,
  types: 2,
  runnersPerQueue: 3,
  maxConcurrency: 4,
  batchSize: 10,
  leaseMs: 3000,
  visibilitySeconds: 5,
  timeoutMs: 6000,
  schedules: 9,
  horizonMs: 20 * 3600_000,
  jumpMinMs: 3 * 3600_000,
  jumpMaxMs: 4 * 3600_000,
  clientTimeoutMs: 1000,
  clientRetries: 3,
  apiFaultRate: 0.03,
  apiEscapeRate: 0.01,
  apiLatencyRate: 0.02,
  workerFaultRate: 0.03,
  workerEscapeRate: 0.005,
  killRate: 0.02,
  duplicateRate: 0.05,
  controlRate: 0.04,
  dlqCopyRate: 0.01,
  batchShare: 0.2,
  eventShare: 0.3,
  composeShare: 0.1,
  fireDropRate: 0.1,
  fireDelayRate: 0.1,
  fireDuplicateRate: 0.1,
  maxSkewMs: 1000,
  producers: 32,
  supervisorIntervalMs: 2000,
  settleMs: 3000,
  soonMs: 8_000,
  supervisorMaxMinutes: 240,
  supervisorEscapeRate: 0.002,
  deadlineMs: 30 * 60_000,
  flow: { limit: 2 },
  flowShare: 0.2,
  dagShare: 0.02,
};

export interface SystemChaosReport {
  ok: boolean;
  seed: number;
  invariants: CheckResult['counts'];
  violations: SystemViolation[];
  /** What the run exercised (each should be > 0). */
  exercised: Record<string, number>;
  counts: Record<string, unknown>;
  durationMs: number;
  timedOut: boolean;
  /** Driven time the run covered, from its start to its last jump (at least `horizonMs`). */
  drivenSpanMs: number;
  /** Driven time the run was asked to cover. */
  horizonMs: number;
  text: string;
}

/** The slot items of `scopes` at the end: who holds each key, and how many tickets each key issued (jobs that waited in line). */
async function slotsAtEnd(w: World, scopes: { scope: string; keys: number | string[] }[]) {
  const slots = new DynamoFlowSlots(w.inspect.dynamo, w.platform.config.tableName);
  const holders: { scope: string; key: string; jobId: string }[] = [];
  const tickets: Record<string, number> = {};
  for (const { scope, keys } of scopes) {
    tickets[scope] = 0;
    const named = typeof keys === 'number' ? Array.from({ length: keys }, (_, k) => `key-${k}`) : keys;
    for (const key of named) {
      const state = await slots.state({ scope, key });
      for (const h of state.holders) holders.push({ scope, key, jobId: h.jobId });
      tickets[scope] += state.issued;
    }
  }
  return {
    holders,
    tickets,
    keys: scopes.reduce((n, s) => n + (typeof s.keys === 'number' ? s.keys : s.keys.length), 0),
  };
}

/** Plain and flow-controlled jobs, interleaved evenly (so both kinds are enqueued throughout). */
function interleave<T>(plain: T[], flow: T[]): T[] {
  const at = (i: number, n: number) => (i + 0.5) / n;
  const out: T[] = [];
  let f = 0;
  plain.forEach((job, i) => {
    while (f < flow.length && at(f, flow.length) <= at(i, plain.length)) out.push(flow[f++] as T);
    out.push(job);
  });
  while (f < flow.length) out.push(flow[f++] as T);
  return out;
}

/**
 * How long after its turn a throttled job's handler may start, beyond a turn come to up to
 * LATE_TURN_MS late and the starting worker's skew: the claim (with SDK retries under faults)
 * and a busy event loop.
 */
const THROTTLE_START_SLACK_MS = 2000;

/**
 * What the durable steps exercised: steps recorded; steps replayed (an execution got a step's
 * recorded result without running its body); bodies run again because their earlier run's result
 * was never recorded; kills between two steps.
 */
function stepsExercised(jobs: PlannedJob[], tracker: ProbeTracker, recorded: Map<string, Map<string, unknown>>) {
  let replayed = 0;
  let rerunUnrecorded = 0;
  for (const [jobId, results] of tracker.stepResults) {
    const runs = tracker.stepRuns.get(jobId) ?? [];
    // every completed body run returned to its own execution; the other results were replays
    replayed += Math.max(0, results.length - runs.filter((run) => run.endedAt !== undefined).length);
    const byStep = new Map<number, number>();
    for (const run of runs) byStep.set(run.step, (byStep.get(run.step) ?? 0) + 1);
    for (const n of byStep.values()) rerunUnrecorded += n - 1;
  }
  const killedBetweenSteps = jobs.filter(
    (j) =>
      j.payload.killOnAttempts &&
      (j.payload.killAfterSteps ?? 0) > 0 &&
      (j.payload.killAfterSteps ?? 0) < (j.payload.steps ?? 0),
  ).length;
  return {
    // every plan exercises these (the small run requires each to be above 0)
    exercised: {
      jobsWithSteps: jobs.filter((j) => (j.payload.steps ?? 0) > 0).length,
      stepsRecorded: [...recorded.values()].reduce((n, m) => n + m.size, 0),
      stepsReplayed: replayed,
    },
    // these depend on where faults and kills fall
    seen: { stepBodiesRunAgainUnrecorded: rerunUnrecorded, killsBetweenSteps: killedBetweenSteps },
  };
}

/**
 * What the flows exercised: flows acknowledged, children that ran once their parents ended, and
 * children a parent's failure ended by their edge's policy (failed or cancelled, never started).
 */
function dependencyFigures(jobs: PlannedJob[], stored: Map<string, Job>, observer: SystemObserver, flows: number) {
  const children = jobs.filter((j) => j.dependsOn !== undefined);
  const started = (id: string) => (observer.starts.get(id)?.length ?? 0) > 0;
  return {
    flowsAcknowledged: flows,
    childrenStarted: children.filter((j) => started(j.id)).length,
    childrenEndedByPolicy: children.filter((j) => {
      const state = stored.get(j.id)?.state;
      return !started(j.id) && (state === 'failed' || state === 'cancelled');
    }).length,
  };
}

/** What the flow-controlled types exercised, from the stored jobs and the logs. */
function flowExercised(stored: Map<string, Job>, observer: SystemObserver, singletonTickets: number) {
  const skipped = (kind: string) =>
    [...stored.values()].filter((j) => j.state === 'skipped' && j.skipReason?.kind === kind).length;
  return {
    singletonWaits: singletonTickets,
    singletonSkips: skipped('singleton'),
    singletonCancels: observer.logged('cancelled the job running with this singleton key'),
    // (a throttled type with priorities waits in its key's line)
    throttleWaits: observer.logged('waiting for its throttle turn') + observer.logged('waiting in its throttle line'),
    rateLimitSkips: skipped('rate-limit'),
    debounceAbsorbed: skipped('debounce'),
  };
}

/**
 * What the composition units did (system-compose.ts), for the report: units by kind, parents and
 * their resumes, children by end state, events sent, and the batch handler's calls.
 */
function composeFigures(
  units: readonly PlannedComposition[],
  records: ComposeRecords,
  actors: ComposeActors,
  stored: Map<string, Job>,
) {
  const kinds: Record<string, number> = {};
  for (const u of units) kinds[u.kind] = (kinds[u.kind] ?? 0) + 1;
  const childStates: Record<string, number> = {};
  for (const job of stored.values()) {
    const tag = (job.payload as { tag?: unknown } | undefined)?.tag;
    if (typeof tag === 'string' && tag.includes('|')) childStates[job.state] = (childStates[job.state] ?? 0) + 1;
  }
  return {
    units: kinds,
    parentsThatInvoked: [...records.invokes.values()].filter((r) => r.reached !== undefined).length,
    // a parent resumes once per wait: one execution past its invokes, more only after a failed attempt
    invokeResumes: [...records.invokes.values()].reduce((n, r) => n + r.resumes.length, 0),
    childStates,
    events: actors.stats,
    batchCalls: records.batchCalls,
  };
}

/**
 * What the composition units exercised, each planned to happen in every run that has them (the
 * small run requires each above 0): a failed child's InvokedJobFailedError seen by its parent, a
 * wait that got its event and one that timed out, and a batch item run again after its first
 * answer failed.
 */
function composeExercised(records: ComposeRecords) {
  const first = [...records.waits.values()].map((r) => r.returns[0]);
  return {
    invokedChildFailuresSeen: [...records.invokes.values()].filter((r) =>
      r.resumes.some((resume) => Object.values(resume.outcomes).some((o) => !o.ok)),
    ).length,
    eventWaitsMatched: first.filter((r) => r !== undefined && r !== null).length,
    eventWaitsTimedOut: first.filter((r) => r === null).length,
    batchItemsRunAgain: [...records.batchRuns.values()].filter((runs) => runs.length > 1).length,
  };
}

/** Jobs of `type` that waited in a line for a slot (they logged so): a ranked line counts no tickets. */
function waitedInLine(observer: SystemObserver, jobs: PlannedJob[], type: string): number {
  return jobs.filter(
    (j) =>
      j.type === type && (observer.logs.get(j.id) ?? []).some((l) => l.message === 'waiting for a concurrency slot'),
  ).length;
}

/** How far the throttled starts went over the exact GCRA bound (no slack), at worst over the keys. */
function throttleOverExact(paced: PacedType[], jobs: PlannedJob[], observer: SystemObserver): number {
  const planned = new Map(jobs.map((j) => [j.id, j]));
  let worst = 0;
  for (const p of paced.filter((x) => x.kind === 'throttle')) {
    const byKey = new Map<string, number[]>();
    for (const [id, starts] of observer.starts) {
      const job = planned.get(id);
      if (job?.type !== p.type) continue;
      const key = job.payload.tag ?? '*';
      byKey.set(key, [...(byKey.get(key) ?? []), ...starts.map((s) => s.drivenAt)]);
    }
    for (const times of byKey.values()) worst = Math.max(worst, gcraExcess(times, p.intervalMs, p.burst, 0));
  }
  return Number(worst.toFixed(2));
}

/** The throttle changes, as the report shows them: when each was sent and answered, and how many turns were given under it. */
function paceReport(changes: readonly PaceChange[], turns: readonly Turn[], started: number) {
  const periods = pacePeriods(turns, changes);
  const at = (ms: number | undefined) => (ms === undefined ? 'never' : `+${((ms - started) / 1000).toFixed(2)}s`);
  return changes.map((c) => ({
    key: c.key,
    throttle: c.throttle ?? 'removed',
    sent: at(c.sentAt),
    acknowledged: at(c.ackAt),
    turnsGivenUnder: periods.find((p) => p.change === c)?.turns.length ?? 0,
  }));
}

/**
 * The hand-off in flight of invariant 17 (real ms): an admitter reads the line's head, then
 * writes, then logs; under injected latency and retries that can take seconds, and a job that
 * joined meanwhile was not yet in the line it read.
 */
const RANKED_HANDOFF_MARGIN_MS = 15_000;

/**
 * The hand-off in flight of invariants 18 and 19 (real ms): between an admitter's read of the
 * slot and its log line, or a job's take and its handler's start (a claim in between, with SDK
 * retries under faults), on a loaded machine.
 */
const FAIR_HANDOFF_MARGIN_MS = 3_000;
/** The key of the fair type whose limit the operator lowers mid-run (its limit has no key function), and to what. */
const LOWERED_KEY = '*';
const LOWERED_LIMIT = 2;

const FINAL_WRITES = new Set(['UpdateItem:succeed', 'UpdateItem:retry', 'UpdateItem:fail']);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs one system chaos experiment and checks it. Broken invariants are in the report (never
 * thrown); `ok` is false when any was violated or the run timed out.
 */
export async function runSystemChaos(input: Partial<SystemChaosOptions> = {}): Promise<SystemChaosReport> {
  const seed = input.seed ?? Date.now() % 2 ** 31;
  const options: SystemChaosOptions = { ...DEFAULT_SYSTEM_CHAOS, ...input, seed };
  const progress = options.progress ?? (() => {});
  const started = Date.now();
  const random = seeded(seed);
  const types = Array.from({ length: options.types }, (_, i) => `sys-${String.fromCharCode(97 + i)}`);
  const scheduleType = 'sys-rec';
  const flowKeys = options.flow.keys ?? Math.max(8, Math.ceil(options.jobs / 100));
  const limitedType = flowKeys > 0 && types.length > 1 ? types.at(-1) : undefined;
  const flowJobs = Math.round(options.jobs * options.flowShare);
  const flowed = flowJobs > 0 ? flowTypes(flowJobs) : [];
  const paced = pacedTypes(flowed);
  const singletonTypes = flowed.filter((f) => f.flow.singleton).map((f) => f.type);
  const debouncedTypes = flowed.filter((f) => f.flow.debounce).map((f) => f.type);
  const rates = {
    scheduleType,
    horizonMs: options.horizonMs,
    leaseMs: options.leaseMs,
    timeoutMs: options.timeoutMs,
    batchShare: options.batchShare,
    killRate: options.killRate,
    duplicateRate: options.duplicateRate,
    controlRate: options.controlRate,
    dlqCopyRate: options.dlqCopyRate,
  };
  const plain = planSystem(
    {
      ...rates,
      jobs: options.jobs,
      types,
      schedules: options.schedules,
      ...(limitedType
        ? {
            tagged: { [limitedType]: flowKeys },
            // its limit of holders on one key, then one more job of the key arrives: it must wait
            lines: [{ holderType: limitedType, holders: options.flow.limit, stages: [[limitedType]] }],
          }
        : {}),
    },
    random,
  );
  // the limited type's jobs get priorities 0–3, from their ids (no draw: the rest of the plan is as before)
  for (const job of plain.jobs) {
    if (job.type === limitedType) job.priority = [...job.id].reduce((n, c) => n + c.charCodeAt(0), 0) % 4;
  }
  const flowPlan = planSystem(
    {
      ...rates,
      jobs: flowJobs,
      types: flowed.map((f) => f.type),
      schedules: 0,
      tagged: Object.fromEntries(flowed.map((f) => [f.type, f.keys])),
      tagRuns: Object.fromEntries(flowed.map((f) => [f.type, f.run ?? 1])),
      bursts: Object.fromEntries(flowed.flatMap((f) => (f.burst ? [[f.type, f.burst]] : []))),
      undelayed: debouncedTypes,
      lines: singletonLines(flowed),
      idPrefix: 'flo',
    },
    seeded(seed ^ 0xf10),
  );
  // the throttled type with priorities: its jobs get priorities 0–3 from their ids, as the limited type's
  const rankedFlow = new Set(flowed.filter((f) => f.priority).map((f) => f.type));
  for (const job of flowPlan.jobs) {
    if (rankedFlow.has(job.type)) job.priority = [...job.id].reduce((n, c) => n + c.charCodeAt(0), 0) % 4;
  }
  const fairCount = options.fairJobs ?? Math.max(40, Math.round(options.jobs * 0.02));
  const fairJobs =
    fairCount > 0
      ? planSystem(
          {
            ...rates,
            jobs: fairCount,
            types: [FAIR_TYPE],
            schedules: 0,
            lines: [fairLine()],
            idPrefix: 'fair',
          },
          seeded(seed ^ 0xfa1),
        ).jobs
      : [];
  assignTenants(fairJobs);
  const diamonds = planDiamonds(
    Math.max(options.dagShare > 0 ? 1 : 0, Math.round((options.jobs * options.dagShare) / DIAMOND_JOBS)),
    types[0] ?? 'sys-a',
    seeded(seed ^ 0xda6),
  );
  const plan = {
    jobs: [...interleave(interleave(plain.jobs, flowPlan.jobs), fairJobs), ...diamonds],
    schedules: plain.schedules,
  };
  // a share of the first plain type's jobs is made by events, each with a sibling job of the
  // event's second subscriber (system-events.ts); the types' retry policy, as below
  const plannedEvents = planEvents(plan.jobs, {
    types: [types[0] ?? 'sys-a', EVENT_TYPE],
    share: options.eventShare,
    maxAttempts: 3,
    backoffDelayMs: 300,
  });
  const subscribers = new Set(plannedEvents.length > 0 ? [types[0] ?? 'sys-a', EVENT_TYPE] : []);
  // a share of the rest become invoking parents (of children of the first type), event waiters and
  // batch items (system-compose.ts)
  const compositions = planCompositions(plan.jobs, {
    childType: types[0] ?? 'sys-a',
    share: options.composeShare,
    min: options.composeShare > 0 ? 6 : 0,
  });
  const composeRecords = new ComposeRecords(compositions, types[0] ?? 'sys-a');
  const workflowUnits = options.workflows ?? Math.max(2 * WORKFLOW_KINDS, Math.round(options.jobs * 0.015));
  const round1 = planWorkflows(workflowUnits, seeded(seed ^ 0x3f1));
  let round2: PlannedWorkflow[] = [];
  const workflowRecords = new WorkflowRecords();
  const singletonKeys = flowed.find((f) => f.flow.singleton)?.keys ?? 0;
  const slotScopes = [
    ...(limitedType ? [{ scope: `${limitedType}#0`, keys: flowKeys }] : []),
    ...(singletonTypes.length > 0 ? [{ scope: `@${SINGLETON_SCOPE}`, keys: singletonKeys }] : []),
    ...(fairJobs.length > 0 ? [{ scope: `${FAIR_TYPE}#0`, keys: [LOWERED_KEY] }] : []),
  ];
  const tracker = new ProbeTracker();
  const observer = new SystemObserver(started);
  const apiFaults = new FaultInjector({
    random: seeded(seed ^ 0xa91),
    profile: {
      rate: options.apiFaultRate,
      escapeRate: options.apiEscapeRate,
      latency: {
        rate: options.apiLatencyRate,
        minMs: Math.round(options.clientTimeoutMs * 1.2),
        maxMs: options.clientTimeoutMs * 4,
      },
    },
  });
  let world: World | undefined;
  const workerFaults = new FaultInjector({
    random: seeded(seed ^ 0x5eed),
    profile: {
      rate: options.workerFaultRate,
      escapeRate: options.workerEscapeRate,
      escapeOps: (call) => !FINAL_WRITES.has(call.op),
    },
  });
  // Escaping faults too. A due-index read that fails holds the shared checkpoint at its minute
  // (the next pass reads again from there), so after a jump of hours one failed read in a pass
  // makes the next pass re-read most of the jump; and a pass reads its minutes one after the
  // other (each minute's shards at once), so every SDK retry of a read (with its back-off of
  // 100–500 ms) adds to the pass. After a jump of hours a pass reads thousands of buckets:
  // reads get a tenth of the fault rates of the repairs' calls, so that passes stay short.
  const queryFaultRandom = seeded(seed ^ 0x9e7);
  const repairOrSometimes = (call: { command: string }) => call.command !== 'Query' || queryFaultRandom() < 0.1;
  const supervisorFaults = new FaultInjector({
    random: seeded(seed ^ 0x5b9),
    profile: {
      rate: options.workerFaultRate,
      ops: repairOrSometimes,
      escapeRate: options.supervisorEscapeRate,
      escapeOps: repairOrSometimes,
    },
  });
  let timedOut = false;
  const deadline = started + options.deadlineMs;
  try {
    const deadZones = new DeadZones();
    const flowOf = new Map(flowed.map((f) => [f.type, f.flow]));
    const flowPriorityOf = new Map(flowed.flatMap((f) => (f.priority ? [[f.type, f.priority] as const] : [])));
    const fairTypes = fairJobs.length > 0 ? [FAIR_TYPE] : [];
    const eventTypes = plannedEvents.length > 0 ? [EVENT_TYPE] : [];
    const defs = [...types, ...eventTypes, ...flowed.map((f) => f.type), ...fairTypes, scheduleType].map((type) =>
      probeJob({
        type,
        tracker,
        deadZones,
        // a held handler (an aimed cancel's, a planned line's holder) outlasts its cancel or line
        timeoutMs: Math.max(options.timeoutMs, HELD_TIMEOUT_MS),
        killedStopsAfterMs: options.timeoutMs,
        maxAttempts: 3,
        backoff: { kind: 'constant', delayMs: 300 },
        // its jobs wait in ranked lines (priorities): a freed place goes to the best rank
        ...(type === limitedType
          ? {
              concurrency: [{ limit: options.flow.limit, key: (p: ProbePayload) => p.tag ?? 'none' }],
              priority: { default: 0, agingSeconds: 2 },
            }
          : {}),
        // its limit is shared fairly between the tenants of a key
        ...(type === FAIR_TYPE ? { concurrency: fairConcurrency() } : {}),
        ...(flowOf.has(type) ? { flow: flowOf.get(type) } : {}),
        ...(flowPriorityOf.has(type) ? { priority: flowPriorityOf.get(type) } : {}),
        ...(subscribers.has(type) ? { on: [SYSTEM_EVENT_SUBSCRIPTION] } : {}),
      }),
    );
    // the handlers run once the world is up: its driven clock, unskewed
    const driven = { now: () => world?.driven.now() ?? Date.now() };
    const allDefs: (JobDefinition | BatchJobDefinition)[] = [...defs];
    if (round1.length > 0) {
      allDefs.push(workflowRecords.definition(tracker, driven, Math.max(options.timeoutMs, 10_000)));
    }
    if (compositions.some((u) => u.kind !== 'batch')) {
      allDefs.push(composeRecords.definition(tracker, driven, Math.max(options.timeoutMs, 10_000)));
    }
    if (compositions.some((u) => u.kind === 'batch')) {
      allDefs.push(composeRecords.batchDefinition(tracker, Math.max(options.timeoutMs, 10_000)));
    }
    world = await startWorld({
      options: {
        seed,
        ...(round1.length > 0 ? { retentionDays: RETENTION_DAYS } : {}),
        runnersPerQueue: options.runnersPerQueue,
        maxConcurrency: options.maxConcurrency,
        batchSize: options.batchSize,
        leaseMs: options.leaseMs,
        visibilitySeconds: options.visibilitySeconds,
        maxSkewMs: options.maxSkewMs,
        fireDropRate: options.fireDropRate,
        fireDelayRate: options.fireDelayRate,
        fireDuplicateRate: options.fireDuplicateRate,
        supervisorIntervalMs: options.supervisorIntervalMs,
        supervisorOptions: { maxMinutesPerRun: options.supervisorMaxMinutes },
        ...(options.dynamodbEndpoint ? { dynamodbEndpoint: options.dynamodbEndpoint } : {}),
      },
      defs: allDefs,
      deadZones,
      observer,
      apiFaults,
      workerFaults,
      supervisorFaults,
    });
    const w = world;
    const t0Driven = w.driven.now();
    progress(
      `system chaos: seed ${seed}, ${plan.jobs.length} jobs (${flowJobs} flow-controlled), ${plan.schedules.length} schedules${limitedType ? `; ${limitedType} limited to ${options.flow.limit} per key over ${flowKeys} keys` : ''}; ${allDefs.length} queues × ${options.runnersPerQueue} runners × ${options.maxConcurrency}; worker skews ${w.skews.workers.join(',')} ms, supervisors ${w.skews.supervisors.join(',')} ms`,
    );
    apiFaults.enabled = true;
    workerFaults.enabled = true;
    supervisorFaults.enabled = true;
    w.startRunners();
    w.startSupervisors();
    // The fair type's line (system-fair.ts): the operator lowers its limit once its holders hold
    // every place (system-limits.ts); they are let go once the lowered limit holds and the
    // followers have waited, each for longer than the hand-off in flight, so that every place
    // handed on from then on is a case of invariants 18 and 19, however the run is timed.
    const fairHolders = [...new Set(fairJobs.flatMap((j) => j.arrival?.holders ?? []))];
    let fairLineFormed = false;
    let fairLineWent = false;
    let letFairLineGo = () => {};
    const fairLineGoes = new Promise<void>((resolve) => {
      letFairLineGo = resolve;
    });
    const composeActors = new ComposeActors(w.platform.url, compositions, w.driven, {
      clientTimeoutMs: options.clientTimeoutMs,
    });
    const actors = new Actors(w, observer, {
      beforeEnqueue: (job) => composeActors.beforeEnqueue(job),
      onAcknowledged: (job) => composeActors.acknowledged(job),
      clientTimeoutMs: options.clientTimeoutMs,
      clientRetries: options.clientRetries,
      producers: options.producers,
      enqueueTries: 8,
      tracker,
      holdLine: (holders) => {
        if (holders[0]?.type !== FAIR_TYPE) return undefined;
        fairLineFormed = true;
        return Promise.all([fairLineGoes, sleep(FAIR_HANDOFF_MARGIN_MS + 1_000)]).then(() => {
          fairLineWent = true;
        });
      },
    });
    const workflows = new WorkflowActors(w.platform.url, workflowRecords, apiFaults, w.driven, seeded(seed ^ 0x3f2), {
      clientTimeoutMs: options.clientTimeoutMs,
    });
    await actors.createSchedules(plan.schedules);
    const operatorClient = createClient({
      url: w.platform.url,
      timeoutMs: options.clientTimeoutMs,
      retry: { retries: options.clientRetries, baseDelayMs: 50, maxDelayMs: 500 },
    });
    // The operator slows the key of the throttled type's burst before the burst is sent, and
    // removes the change once the burst has asked for its turns (system-limits.ts; its jobs wait
    // in the key's throttle line, so a turn is recorded as it is taken, when it is free)
    const throttled = flowed.find((f) => f.flow.throttle);
    const throttledKey = flowPlan.jobs.find((j) => j.type === throttled?.type && j.together !== undefined)?.payload.tag;
    const slowing =
      throttled && throttledKey !== undefined
        ? changeThrottleMidRun({
            client: operatorClient,
            type: throttled.type,
            key: throttledKey,
            throttle: CHAOS_RUNTIME_THROTTLE,
            done: (since) =>
              (observer.turns.get(`${paceScope(throttled.type, 'throttle')}|${throttledKey}`) ?? []).filter(
                (t) => t.askedAt > since,
              ).length >= (throttled.burst ?? 1),
            holdMs: 120_000,
          })
        : undefined;
    await slowing?.set;
    const produceStarted = Date.now();
    const followerIds = fairJobs.filter((j) => j.arrival !== undefined).map((j) => j.id);
    const changing =
      fairJobs.length > 0
        ? changeLimitMidRun({
            client: operatorClient,
            type: FAIR_TYPE,
            key: LOWERED_KEY,
            lowered: LOWERED_LIMIT,
            // once its holders hold every place (or its followers have arrived)
            held: () => fairLineFormed || fairHolders.every((id) => (tracker.jobs.get(id)?.running ?? 0) > 0),
            proceed: letFairLineGo,
            // the line went on, and every follower that arrived (its enqueue may have gone
            // unanswered) ran to an end
            drained: () =>
              fairLineWent &&
              followerIds.every((id) => {
                const executions = tracker.jobs.get(id)?.executions ?? [];
                const waited = observer.logs.get(id)?.some((l) => l.message === 'waiting for a concurrency slot');
                return executions.some((e) => e.endedAt !== undefined) || (executions.length === 0 && !waited);
              }),
            waitMs: 180_000,
            holdMs: 120_000,
            marginMs: FAIR_HANDOFF_MARGIN_MS,
          })
        : Promise.resolve([] as LimitChange[]);
    const [, , limitChanges, paceChanges] = await Promise.all([
      actors.produce(plan.jobs),
      workflows.produce(round1),
      changing,
      slowing?.changes ?? Promise.resolve([] as PaceChange[]),
    ]);
    const produceMs = Date.now() - produceStarted;
    progress(
      `system chaos: enqueued in ${(produceMs / 1000).toFixed(1)} s: ${actors.stats.acknowledged} acknowledged, ${actors.stats.notAcknowledged} not; ${actors.stats.enqueueRetries} retries`,
    );

    // ---- phase A: real time, until the actors are done and the system is quiet --------------
    let stored = new Map<string, Job>();
    const openCount = () =>
      [...observer.acks.keys()].filter((id) => {
        const job = stored.get(id);
        // held: nothing moves it but an operator, so the run does not wait for it
        return job !== undefined && !isSettled(job.state);
      }).length;
    const stateCounts = () => {
      const states: Record<string, number> = {};
      for (const job of stored.values()) states[job.state] = (states[job.state] ?? 0) + 1;
      return states;
    };
    /**
     * Waits until the system is quiet: for `settleMs` on end, no handler ran, no actor action or
     * Scheduler delivery was pending and no message was visible, and each supervisor finished a
     * pass that began in that time. A hidden message that comes back within `soonMs` (in flight
     * after a killed worker, a short delay or backoff) is waited for: then the quiet must last
     * `soonMs`. Messages hidden in real time keep coming back for many minutes (SQS delays of up
     * to 15 min, messages of jobs not due for hours), mostly of jobs the supervisor re-sent long
     * ago; a run that waited for them would never jump. They are what the next jumps and the
     * supervisors deal with (and the work a few of them bring is done between two polls).
     */
    const settle = async (what: string) => {
      let quietSince = Date.now();
      let lastProgress = Date.now();
      for (;;) {
        await sleep(500);
        const running = [...tracker.jobs.values()].reduce((n, t) => n + t.running, 0);
        const queues = w.queueState(options.soonMs);
        const idle =
          running === 0 &&
          actors.busy === 0 &&
          workflows.busy === 0 &&
          composeActors.busy === 0 &&
          w.fireStats.pending === 0 &&
          queues.visible === 0;
        if (!idle) quietSince = Date.now();
        if (Date.now() - lastProgress > 15_000) {
          lastProgress = Date.now();
          const executions = [...tracker.jobs.values()].reduce((n, t) => n + t.executions.length, 0);
          progress(
            `system chaos: ${Math.round((Date.now() - started) / 1000)} s ${what}: executions ${executions} running ${running} messages ${JSON.stringify(queues)} actions ${actors.busy}`,
          );
        }
        const quietFor = Date.now() - quietSince;
        const quiet =
          idle &&
          quietFor >= options.settleMs &&
          (queues.soon === 0 || quietFor >= options.soonMs) &&
          w.passesStartedSince(quietSince).every((n) => n > 0);
        if (quiet) break;
        if (Date.now() > deadline) {
          timedOut = true;
          break;
        }
      }
      stored = await w.scanJobs();
    };
    await settle('real time');
    const phaseAMs = Date.now() - started;
    progress(
      `system chaos: real-time phase quiet after ${Math.round(phaseAMs / 1000)} s: ${JSON.stringify(stateCounts())}`,
    );

    // ---- phase B: jump the driven clock at quiescent points ----------------------------------
    let liveLeaseAtJump = 0;
    /** Stops runners and supervisors and waits until no lease is live (by any clock). */
    const quiesce = async () => {
      await w.stopSupervisors();
      await w.stopRunners();
      const waitUntil = Date.now() + options.leaseMs + options.maxSkewMs * 2 + 1000;
      for (;;) {
        while ([...tracker.jobs.values()].some((t) => t.running > 0) && Date.now() < waitUntil) await sleep(100);
        stored = await w.scanJobs();
        const now = w.driven.now();
        const live = [...stored.values()].filter(
          (j) => j.state === 'running' && (j.leaseExpiresAt ?? 0) + options.maxSkewMs >= now,
        );
        const running = [...tracker.jobs.values()].reduce((n, t) => n + t.running, 0);
        if (live.length === 0 && running === 0) return;
        if (Date.now() > waitUntil) {
          liveLeaseAtJump += live.length;
          return;
        }
        // Sleep until the latest live lease has run out (by the fastest clock), then look again.
        const latest = Math.max(0, ...live.map((j) => (j.leaseExpiresAt ?? 0) + options.maxSkewMs - now));
        await sleep(Math.min(Math.max(100, latest + 50), waitUntil - Date.now() + 10));
      }
    };
    const phaseMs = { quiesce: 0, fire: 0, supervise: 0, settle: 0 };
    const cycleLog: CycleRecord[] = [];
    const cycle = async (stepMs: number) => {
      let t = Date.now();
      const lap = (key: keyof typeof phaseMs) => {
        phaseMs[key] += Date.now() - t;
        t = Date.now();
      };
      await quiesce();
      lap('quiesce');
      const from = w.driven.now();
      const to = w.driven.jump(stepMs);
      await w.aws.scheduler.fireDue();
      lap('fire');
      w.startRunners();
      // One pass of both supervisors at once, at the new time, while the runners work.
      await w.supervise();
      lap('supervise');
      w.startSupervisors();
      await settle(`after jump to +${((w.driven.now() - t0Driven) / 3600_000).toFixed(2)} h`);
      lap('settle');
      cycleLog.push({ from, to, settledAt: w.driven.now() });
    };
    let cycles = 0;
    const horizonEnd = t0Driven + options.horizonMs;
    while (!timedOut) {
      const now = w.driven.now();
      const open = [...observer.acks.keys()]
        .map((id) => stored.get(id))
        .filter((j): j is Job => j !== undefined && !isSettled(j.state));
      // The run covers `horizonMs` of driven time; work due later stays pending (invariant 1
      // accepts a job not due by the end).
      if (now >= horizonEnd || (open.length === 0 && now >= horizonEnd - options.jumpMinMs)) break;
      // Short of real time (a slow or busy machine), the next cycle is the last and jumps
      // straight past the horizon: stopping short would leave the work due late in the run
      // (backoffs beyond 12 h) never exercised.
      const reserve = CLOSING_RESERVE_MS + ONE_CYCLE_RESERVE_MS + (round1.length > 0 ? REUSE_RESERVE_MS : 0);
      const last = cycles >= 59 || Date.now() > deadline - reserve;
      const nextDue = Math.min(...open.map((j) => Date.parse(j.runAt)).filter((t) => t > now), horizonEnd);
      const step = last
        ? horizonEnd - now + 60_000
        : Math.min(options.jumpMaxMs, Math.max(options.jumpMinMs, nextDue - now + 2 * 60_000)) * (0.8 + random() * 0.4);
      await cycle(Math.round(Math.min(step, horizonEnd - now + 60_000)));
      cycles += 1;
      progress(
        `system chaos: cycle ${cycles} at +${((w.driven.now() - t0Driven) / 3600_000).toFixed(2)} h after ${Math.round((Date.now() - started) / 1000)} s: ${openCount()} acknowledged jobs open ${JSON.stringify(stateCounts())}; real ms so far ${JSON.stringify(phaseMs)}; supervisor ${JSON.stringify(w.supervisorStats)}`,
      );
    }
    // ---- the events' jobs as the API lists them (before the jump past retention) --------------
    const eventsSeen: EventsInput = {
      planned: plannedEvents,
      answers: actors.eventAnswers,
      listed: await actors.readEvents(plannedEvents.filter((e) => actors.eventAnswers.has(e.id))),
      stored: new Set(stored.keys()),
    };

    // ---- the workflows' ids reused once their first jobs are past retention ----------------------
    let storedBeforeReuse = stored;
    if (round1.length > 0 && !timedOut) {
      // only ids whose first job ended (one that did not is a violation of its own), and a child
      // only with its new parent
      const ended = (id: string) => {
        const job = stored.get(id);
        return job !== undefined && isTerminal(job.state) && job.finishedAt !== undefined;
      };
      const reusable = planReuse(round1, seeded(seed ^ 0x3f3)).filter((j) => ended(j.id));
      round2 = reusable.filter((j) =>
        Object.keys(j.payload.parents ?? {}).every((p) => reusable.some((r) => r.id === p)),
      );
      const lastEnd = Math.max(0, ...round2.map((j) => Date.parse(stored.get(j.id)?.finishedAt ?? '')));
      const reuseAt = lastEnd + RETENTION_DAYS * 86_400_000 + 3600_000;
      if (reuseAt > w.driven.now()) {
        await cycle(reuseAt - w.driven.now());
        cycles += 1;
      }
      storedBeforeReuse = stored;
      await workflows.produce(round2);
      await settle('ids reused');
      progress(
        `system chaos: ${round2.length} workflow ids reused at +${((w.driven.now() - t0Driven) / 3600_000).toFixed(2)} h after ${Math.round((Date.now() - started) / 1000)} s: ${JSON.stringify(workflows.stats)}`,
      );
    }

    // Two short jumps (past the supervisor's grace) so that every slot up to here is handled;
    // the last without Scheduler faults, nor faults of the supervisors' calls: a repair that a
    // fault deferred past the run's end would leave work overdue that the system does repair.
    const slotsHandledBy = w.driven.now();
    await cycle(20 * 60_000);
    w.fireFaults.enabled = false;
    supervisorFaults.enabled = false;
    await cycle(20 * 60_000);
    cycles += 2;

    // ---- stop and check ---------------------------------------------------------------------
    apiFaults.enabled = false;
    workerFaults.enabled = false;
    supervisorFaults.enabled = false;
    actors.stop();
    await w.stopSupervisors();
    await w.stopRunners();
    const finalNow = w.driven.now();
    stored = await w.scanJobs();
    const dlqBodies: string[] = [];
    for (const url of w.dlqUrls) {
      for (;;) {
        const out = await w.inspect.sqs.send(
          new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 300 }),
        );
        if (!out.Messages || out.Messages.length === 0) break;
        for (const m of out.Messages) dlqBodies.push(m.Body ?? '');
      }
    }
    const scheduleItems = new Map<string, Schedule | undefined>();
    for (const s of actors.schedules) scheduleItems.set(s.name, await w.getSchedule(s.name));
    const slots = await slotsAtEnd(w, slotScopes);
    const steps = await w.scanSteps((id) => stored.get(id)?.journal);
    const stepFigures = stepsExercised(plan.jobs, tracker, steps);
    const workflowCheck =
      round1.length > 0
        ? checkWorkflows({
            planned: [...round1, ...round2],
            records: workflowRecords,
            actors: workflows,
            stored,
            storedBeforeReuse,
            cycles: cycleLog,
            maxSkewMs: options.maxSkewMs,
            supervisorIntervalMs: options.supervisorIntervalMs,
            finalNow,
          })
        : undefined;
    const executionsById = new Map([...tracker.jobs].map(([id, trace]) => [id, trace.executions]));
    const fairScope = `${FAIR_TYPE}#0`;
    const result = checkInvariants({
      ...(workflowCheck ? { workflows: workflowCheck } : {}),
      ...(compositions.length > 0
        ? {
            compose: {
              invokes: {
                planned: compositions,
                records: composeRecords.invokes,
                stored,
                executions: executionsById,
                maxSkewMs: options.maxSkewMs,
                finalNow,
              },
              waits: {
                planned: compositions,
                records: composeRecords.waits,
                sent: composeActors.sent,
                stored,
                marginMs: 2 * options.maxSkewMs + 1000,
              },
              batches: {
                planned: compositions,
                runs: composeRecords.batchRuns,
                writes: observer.outcomeWrites,
                stored,
              },
            },
          }
        : {}),
      events: eventsSeen,
      jobs: plan.jobs,
      schedules: actors.schedules,
      stored,
      scheduleItems,
      dlqBodies,
      observer,
      tracker,
      faults: [apiFaults, workerFaults, supervisorFaults],
      finalNow,
      slotsHandledBy,
      maxSkewMs: options.maxSkewMs,
      fireFates: w.fireStats.fates,
      limits: [
        ...(limitedType
          ? [{ label: `${limitedType} concurrency`, types: [limitedType], limit: options.flow.limit }]
          : []),
        ...(singletonTypes.length > 0
          ? [{ label: `singleton scope ${SINGLETON_SCOPE}`, types: singletonTypes, limit: 1 }]
          : []),
        ...(fairJobs.length > 0
          ? [
              {
                label: `${FAIR_TYPE} concurrency (fair)`,
                types: [FAIR_TYPE],
                limit: FAIR_LIMIT,
                runtime: { [LOWERED_KEY]: limitChanges.flatMap((c) => (c.limit === undefined ? [] : [c.limit])) },
              },
            ]
          : []),
      ],
      ...(slotScopes.length > 0 ? { slotKeys: slots.keys, slotHolders: slots.holders } : {}),
      // a throttled type with priorities: its turns go by rank
      ...(rankedFlow.size > 0
        ? {
            throttleLine: {
              scope: `${[...rankedFlow][0]}~t`,
              line: 'throttle' as const,
              ticketsIssued: 0,
              marginMs: RANKED_HANDOFF_MARGIN_MS,
            },
          }
        : {}),
      ...(limitedType
        ? {
            rankedLine: {
              scope: `${limitedType}#0`,
              ticketsIssued: slots.tickets[`${limitedType}#0`] ?? 0,
              marginMs: RANKED_HANDOFF_MARGIN_MS,
            },
          }
        : {}),
      ...(fairJobs.length > 0
        ? {
            fairShare: {
              scope: fairScope,
              jobs: fairJobs,
              executions: executionsById,
              weightOf: fairWeight,
              marginMs: FAIR_HANDOFF_MARGIN_MS,
              inFlightMs: WAKE_GRACE_MS,
              apiHandOns: apiHandOns(limitChanges),
            },
            runtimeLimits: {
              scope: fairScope,
              jobs: fairJobs,
              executions: executionsById,
              changes: limitChanges,
              marginMs: FAIR_HANDOFF_MARGIN_MS,
            },
          }
        : {}),
      paced,
      ...(throttled && throttledKey !== undefined
        ? { paceChanges: [{ type: throttled.type, key: throttledKey, changes: paceChanges }] }
        : {}),
      throttleWindow: {
        earlyMs: options.maxSkewMs + 50,
        lateMs: LATE_TURN_MS + options.maxSkewMs + THROTTLE_START_SLACK_MS,
      },
      debounced: debouncedTypes,
      steps,
    });

    // ---- what was exercised -----------------------------------------------------------------
    const planned = new Map(plan.jobs.map((j) => [j.id, j]));
    const byKind = (faults: FaultInjector) => {
      const out: Record<string, number> = {};
      for (const e of faults.events) out[e.kind] = (out[e.kind] ?? 0) + 1;
      return out;
    };
    const apiKinds = byKind(apiFaults);
    const workerKinds = byKind(workerFaults);
    const executions = [...tracker.jobs.values()].flatMap((t) => t.executions);
    const startsOf = (pred: (job: (typeof plan.jobs)[number]) => boolean, attemptAbove = 0) =>
      [...observer.starts]
        .filter(([id]) => {
          const job = planned.get(id);
          return job !== undefined && pred(job);
        })
        .reduce((n, [, starts]) => n + starts.filter((s) => s.attempt > attemptAbove).length, 0);
    const runs = [...stored.values()].filter((j) => j.schedule !== undefined);
    const schedulesByPolicy: Record<string, number> = {};
    for (const s of actors.schedules) schedulesByPolicy[s.overlap] = (schedulesByPolicy[s.overlap] ?? 0) + 1;
    const skips = [...scheduleItems.values()].reduce((n, s) => n + (s?.skipped ?? 0), 0);
    const exercised: Record<string, number> = {
      apiLatencyFaults: apiKinds.latency ?? 0,
      apiFailureFaults: (apiKinds.throttle ?? 0) + (apiKinds.server ?? 0) + (apiKinds.timeout ?? 0),
      apiLostResponses: apiFaults.events.filter((e) => e.phase === 'after' && e.kind !== 'latency').length,
      apiSchedulerFaults: apiFaults.events.filter((e) => /Schedule/.test(e.op)).length,
      workerFaults: workerFaults.events.length,
      clientRetriesAfterGivingUp: actors.stats.enqueueRetries,
      clientTimeouts: actors.http.timeouts,
      clientAttemptsBeyondFirst: actors.http.attempts - actors.http.calls,
      clientErrors: Object.values(actors.stats.enqueueErrors).reduce((a, b) => a + b, 0),
      batchCalls: actors.stats.batchCalls,
      cancelsOfQueued: actors.stats.cancels.queued ?? 0,
      cancelsOfRunning: actors.stats.cancels.running ?? 0,
      cancelsOfRetrying: actors.stats.cancels.retrying ?? 0,
      cancelsOfScheduled: actors.stats.cancels.scheduled ?? 0,
      cancelsAcknowledged: actors.stats.cancelAnswers['200'] ?? 0,
      retriesAcknowledged: actors.stats.retryAnswers['200'] ?? 0,
      // reruns from a step racing the attempt their cancel stopped (the stored jobs count them:
      // one applied whose every answer was lost counts too)
      rerunsApplied: plan.jobs.filter((j) => j.control?.rerunFromStep && (stored.get(j.id)?.reruns ?? 0) > 0).length,
      dlqCopies: actors.stats.dlqCopies,
      redriveCalls: actors.stats.redriveCalls,
      duplicatesSent: actors.stats.duplicatesSent,
      killedAttempts: executions.filter((e) => e.end === 'killed').length,
      ...stepFigures.exercised,
      ...dependencyFigures(plan.jobs, stored, observer, actors.stats.flowsAcknowledged),
      sqsShortDelayedStarts: startsOf((j) => j.timing === 'sqs-short'),
      sqsLongDelayedStarts: startsOf((j) => j.timing === 'sqs-long'),
      schedulerDelayedStarts: startsOf((j) => j.timing === 'scheduler'),
      hoursBackoffRetries: startsOf((j) => j.backoffKind === 'hours', 1),
      daysBackoffRetries: startsOf((j) => j.backoffKind === 'days', 1),
      clockJumps: w.driven.jumps.length,
      schedulesAllow: schedulesByPolicy.allow ?? 0,
      schedulesSkip: schedulesByPolicy.skip ?? 0,
      schedulesQueueOne: schedulesByPolicy['queue-one'] ?? 0,
      recurringRuns: runs.length,
      recurringSkips: skips,
      firesDropped: w.fireStats.dropped,
      firesDelayed: w.fireStats.delayed,
      firesDuplicated: w.fireStats.duplicated,
      supervisorResends: w.supervisorStats.resent,
      supervisorFires: w.supervisorStats.fired,
      supervisorEscapingFaults: supervisorFaults.events.filter((e) => e.escaping && e.attempt === 1).length,
      workerSkewSpreadMs: Math.max(...w.skews.workers) - Math.min(...w.skews.workers),
      ...(limitedType ? { concurrencyWaits: waitedInLine(observer, plan.jobs, limitedType) } : {}),
      ...(flowJobs > 0 ? flowExercised(stored, observer, slots.tickets[`@${SINGLETON_SCOPE}`] ?? 0) : {}),
      ...workflowCheck?.exercised,
      ...(compositions.length > 0 ? composeExercised(composeRecords) : {}),
    };
    const finalStates: Record<string, number> = {};
    for (const id of observer.acks.keys()) {
      const state = stored.get(id)?.state ?? 'missing';
      finalStates[state] = (finalStates[state] ?? 0) + 1;
    }
    const counts: Record<string, unknown> = {
      jobs: plan.jobs.length,
      acknowledged: actors.stats.acknowledged,
      notAcknowledged: actors.stats.notAcknowledged,
      finalStatesOfAcknowledged: finalStates,
      legitimatelyPendingAtEnd: result.pendingAtEnd,
      handlerExecutions: executions.length,
      actors: actors.stats,
      ...(round1.length > 0
        ? {
            workflows: {
              ...workflows.stats,
              // the first ten calls killed, to show where the kills landed (all are counted in `kills`)
              killedAt: workflows.stats.killedAt.slice(0, 10),
              round1: round1.length,
              round2: round2.length,
            },
          }
        : {}),
      ...(compositions.length > 0
        ? { compose: composeFigures(compositions, composeRecords, composeActors, stored) }
        : {}),
      apiCallsKilled: apiFaults.hung,
      apiFaults: apiKinds,
      workerFaults: workerKinds,
      supervisorFaults: byKind(supervisorFaults),
      clientHttp: actors.http,
      fires: { ...w.fireStats, fates: undefined },
      supervisor: w.supervisorStats,
      runners: w.runnerStats(),
      killedInvocations: w.killedInvocations(),
      steps: stepFigures.seen,
      swallowedCallsOfKilledWorkers: w.deadZones.swallowed,
      liveLeaseAtJump,
      realTimePhaseMs: phaseAMs,
      cyclePhasesMs: phaseMs,
      cycles,
      drivenSpanHours: Number(((finalNow - t0Driven) / 3600_000).toFixed(2)),
      dlqMessagesLeft: dlqBodies.length,
      throttleStartsOverExactBound: throttleOverExact(paced, plan.jobs, observer),
      ...(fairJobs.length > 0
        ? {
            fairType: {
              jobs: fairJobs.length,
              waitedInLine: waitedInLine(observer, plan.jobs, FAIR_TYPE),
              byTenant: Object.fromEntries(
                ['t0', 't1', 't2', 't3'].map((t) => [t, fairJobs.filter((j) => j.payload.tenant === t).length]),
              ),
            },
            limitChanges: limitChanges.map((c) => ({
              key: c.key,
              limit: c.limit ?? 'removed',
              sent: `+${((c.sentAt - started) / 1000).toFixed(2)}s`,
              acknowledged: c.ackAt === undefined ? 'never' : `+${((c.ackAt - started) / 1000).toFixed(2)}s`,
              handedOn: c.handedOn.length,
            })),
          }
        : {}),
      ...(throttled && throttledKey !== undefined && paceChanges.length > 0
        ? {
            paceChanges: paceReport(
              paceChanges,
              observer.turns.get(`${paceScope(throttled.type, 'throttle')}|${throttledKey}`) ?? [],
              started,
            ),
          }
        : {}),
      produceMs,
      firstErrors: observer.errors.slice(0, 25),
      logged: {
        leaseLost: observer.logged('lease lost; aborting handler'),
        lateWritesRejected: observer.logged('late write rejected: the lease was taken over or the job changed'),
        busyDuplicates: observer.logged('duplicate delivery of a job running under a live lease; discarding it'),
        missingJob: observer.logged('no job for this message (expired or never written); discarding it'),
        firesMissed: observer.logged('schedule fires were missed'),
        supervisorRepairFailed: observer.logged('supervisor repair failed; the next pass tries again'),
        sweepFailed: observer.logged('could not sweep the jobs created in a window; the next pass reads it again'),
        registrationsHealed: observer.logged('healed a waiting job whose registration was lost'),
        // a handler still running a heartbeat interval after its abort: the runs' handlers honour
        // ctx.signal, so each one is the runtime's own call that did not (a killed worker's aside)
        handlersNotStopped: observer.logged(
          'the handler did not stop within a heartbeat interval of its abort signal; pass ctx.signal on',
        ),
      },
    };
    const durationMs = Date.now() - started;
    const drivenSpanMs = finalNow - t0Driven;
    const ok = result.violations.length === 0 && !timedOut && drivenSpanMs >= options.horizonMs;
    const report: SystemChaosReport = {
      ok,
      seed,
      invariants: result.counts,
      violations: result.violations,
      exercised,
      counts,
      durationMs,
      timedOut,
      drivenSpanMs,
      horizonMs: options.horizonMs,
      text: '',
    };
    report.text = formatReport(report);
    return report;
  } finally {
    await world?.stop();
  }
}

function formatReport(report: SystemChaosReport): string {
  const out: string[] = [];
  const idle = INVARIANTS.filter((name) => report.invariants[name].checked === 0);
  out.push(
    `system chaos run: seed ${report.seed}, ${String(report.counts.jobs)} jobs, ${(report.durationMs / 1000).toFixed(1)} s${report.timedOut ? ' (TIMED OUT)' : ''}${report.drivenSpanMs < report.horizonMs ? ' (SHORT OF ITS HORIZON)' : ''} — ${report.ok ? 'ALL INVARIANTS HELD' : `${report.violations.length} VIOLATIONS`}${idle.length > 0 ? ` (${idle.length} NOT EXERCISED)` : ''}`,
  );
  out.push('  invariants (checked / violated):');
  for (const name of INVARIANTS) {
    const c = report.invariants[name];
    // a check that checked nothing held vacuously: said so, not counted as held
    out.push(
      `    ${name}: ${c.checked} checked, ${c.violated} violated${c.checked === 0 ? ' — NOT EXERCISED (0 cases checked)' : ''}`,
    );
  }
  if (idle.length > 0) out.push(`  NOT EXERCISED: ${idle.map((name) => name.split(' ')[0]).join(', ')}`);
  out.push(`  exercised: ${JSON.stringify(report.exercised)}`);
  for (const [key, value] of Object.entries(report.counts)) {
    out.push(`  ${key}: ${typeof value === 'object' ? JSON.stringify(value) : String(value)}`);
  }
  const byInvariant = new Map<string, SystemViolation[]>();
  for (const v of report.violations) byInvariant.set(v.invariant, [...(byInvariant.get(v.invariant) ?? []), v]);
  for (const [invariant, list] of byInvariant) {
    // a violation may bring the stories of the jobs it involves (invariants 8 and 18): the count
    // of violations is the table's above; this is how many stories there are
    out.push(`  VIOLATED "${invariant}": ${list.length} stories`);
    for (const v of list.slice(0, 8)) out.push(`  - ${v.subject}: ${v.detail}\n${v.story}`);
  }
  return out.join('\n');
}
