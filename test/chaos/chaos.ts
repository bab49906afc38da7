/**
 * Chaos driver: runs thousands of probe jobs of mixed behaviour through the real platform code
 * on local AWS, with several concurrent queue runners per job type, while injecting:
 *
 * - AWS faults at the SDK middleware level (test/support/faults.ts): throttling, 5xx and
 *   network errors on a fraction of HTTP attempts, before the request reaches the emulator
 *   (not applied) and after it (applied, response lost). The SDK's retry strategy sees them
 *   like real AWS faults; a smaller fraction of calls fails on every attempt (escapes retries);
 * - duplicate deliveries: extra copies of some job messages, sent at random times;
 * - killed workers: some attempts' processes die mid-handler (no result, no more heartbeats or
 *   writes, the invocation abandoned); their message must come back after its visibility.
 *
 * Then it checks the lifecycle guarantees for every job and reports counts. Used by
 * `npm run test:chaos` (test/chaos/run.ts, ≥ 2,000 jobs) and by the small variant in `npm test`
 * (test/integration/chaos-small.test.ts).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { type AwsClients, createAwsClients } from '../../shared/aws/clients';
import { DynamoJobStore } from '../../shared/aws/dynamo-job-store';
import { fromItem, isStatusItem } from '../../shared/aws/job-item';
import { SqsJobQueue } from '../../shared/aws/sqs-job-queue';
import type { Job } from '../../shared/core/job';
import type { JobStore } from '../../shared/core/ports';
import { isSettled, isTerminal } from '../../shared/core/states';
import { createLogger } from '../../shared/logger';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { createWorker } from '../../shared/runtime/worker';
import { type LocalAws, localClients, startLocalAws } from '../local-aws/index';
import { type QueueRunner, type SqsLambdaHandler, startQueueRunner } from '../local-aws/lambda-runner';
import { startLocalPlatform } from '../local-aws/local-platform';
import { measureWriteLatency } from '../local-aws/moto';
import { uniquePrefix } from '../local-aws/namespace';
import { type CallInfo, crashable, DeadZones, type FaultEvent, FaultInjector, interceptStore } from '../support/faults';
import { countEnds, type Execution, type ProbePayload, ProbeTracker, probeJob } from '../support/probes';
import { messagesIn } from '../support/queues';
import { seeded } from './seeded';

export interface ChaosOptions {
  /** Jobs to run. @default 2000 */
  jobs: number;
  /** Seed of every random choice (plan and faults; timing still varies). @default Date.now() */
  seed: number;
  /** Job types, i.e. queues. @default 2 */
  types: number;
  /** Runner instances (Lambda containers, each its own worker/owner) per queue. @default 4 */
  runnersPerQueue: number;
  /** Concurrent invocations per runner. @default 4 */
  maxConcurrency: number;
  /** @default 10 */
  batchSize: number;
  /**
   * Shortest lease; the run raises it to keep the production rule, at least 10 × the p99 of a
   * conditional write on its DynamoDB Local (timed at its start; see {@link chaosLease}). The
   * floor is headroom for a machine that gets busier after the start (a 2 s lease lost attempts
   * at a load average of 11); the report gives the heartbeats' own latency during the run.
   * @default 4000
   */
  leaseMs: number;
  /** Ready-queue visibility timeout. @default 5 */
  visibilitySeconds: number;
  /** Job type timeout; raised with the lease so that a long job (up to 2 leases) fits: 2 × lease + 1 s. @default 5000 */
  timeoutMs: number;
  /** Probability that one HTTP attempt fails (retried by the SDK). @default 0.04 */
  faultRate: number;
  /** Probability that a call fails on every SDK attempt. @default 0.01 */
  escapeRate: number;
  /** Share of faults applied before their response was lost. @default 0.5 */
  afterShare: number;
  /** Let escaping faults hit the final writes (succeed / retry / fail). @default false */
  escapeFinalWrites: boolean;
  /**
   * Which calls may lose their response after being applied: `all`, or only `idempotent`
   * ones (not claim / retry / fail writes, where the runtime currently mishandles it).
   * @default 'all'
   */
  lostResponses: 'all' | 'idempotent';
  /** Share of jobs whose worker is killed during one attempt. @default 0.03 */
  killRate: number;
  /** Share of jobs that get a duplicate copy of their message. @default 0.05 */
  duplicateRate: number;
  /** @default 32 */
  enqueueConcurrency: number;
  /** Give up after this long. @default 9 min */
  deadlineMs: number;
  /** Stop early when queues are empty and nothing changed for this long. @default 3 × visibility + lease */
  stallMs: number;
  /** Reuse a running DynamoDB Local (vitest's global setup); otherwise one is started. */
  dynamodbEndpoint?: string;
  /** Progress lines. @default none */
  progress?: (line: string) => void;
}

export const DEFAULT_CHAOS: Omit<ChaosOptions, 'seed' | 'stallMs'> = {
  jobs: 2000,
  types: 2,
  runnersPerQueue: 4,
  maxConcurrency: 4,
  batchSize: 10,
  leaseMs: 4000,
  visibilitySeconds: 5,
  timeoutMs: 5000,
  faultRate: 0.04,
  escapeRate: 0.01,
  afterShare: 0.5,
  escapeFinalWrites: false,
  lostResponses: 'all',
  killRate: 0.03,
  duplicateRate: 0.05,
  enqueueConcurrency: 32,
  deadlineMs: 9 * 60_000,
};

type Behaviour = 'succeed' | 'sleep' | 'long' | 'flaky' | 'always-fail';

export interface PlannedJob {
  id: string;
  type: string;
  behaviour: Behaviour;
  payload: ProbePayload;
  maxAttempts: number;
  expected: 'succeeded' | 'failed';
  duplicate?: { afterMs: number; delaySeconds: number };
}

/** One broken guarantee, with what happened to the job. */
export interface Violation {
  jobId: string;
  rule: string;
  detail: string;
  /** The known sequence that explains it, when the driver recognises one. */
  cause: string;
  /** The job's story: plan, final item, executions, faults on its calls, its log lines. */
  story: string;
}

export interface ChaosReport {
  ok: boolean;
  seed: number;
  options: Omit<ChaosOptions, 'progress'>;
  violations: Violation[];
  /**
   * Departures the faults explain, not violations: double completions after a success write
   * lost on every SDK attempt (at-least-once), and jobs whose attempts the plan and the injected
   * faults used up (see {@link attemptsUsedUp}).
   */
  atLeastOnce: Violation[];
  counts: Record<string, number | string | Record<string, number>>;
  durationMs: number;
  /** Human-readable summary. */
  text: string;
}

const FINAL_WRITES = new Set(['UpdateItem:succeed', 'UpdateItem:retry', 'UpdateItem:fail']);
const NON_IDEMPOTENT_AFTER = new Set(['UpdateItem:claim', 'UpdateItem:retry', 'UpdateItem:fail']);

/** Planned kills a run with a kill rate always has, so a small run never goes without (its check counts them). */
export const MIN_PLANNED_KILLS = 3;

/**
 * The lease and timeout of a run whose storage answers conditional writes in `writeP99Ms` at the
 * 99th percentile: the production rule, lease ≥ 10 × that p99 (shared/runtime/worker.ts; the lease
 * keeper warns below it), in whole seconds and never below `leaseMs`; and a timeout a long job
 * (up to 2 leases of work) fits in, a second to spare. A heartbeat slowed by the machine alone
 * then never loses an attempt. The injected faults are apart: a heartbeat the SDK retries after a
 * throttle waits up to 500 ms more, and one that fails on every SDK attempt (an escaping fault)
 * loses the attempt whatever the lease (the keeper stops a handler it cannot renew), so the
 * outcome check recognises a job whose every lost attempt met an injected heartbeat fault.
 */
export function chaosLease(options: ChaosOptions, writeP99Ms: number): { leaseMs: number; timeoutMs: number } {
  const leaseMs = Math.max(options.leaseMs, Math.ceil((10 * writeP99Ms) / 1000) * 1000);
  return { leaseMs, timeoutMs: Math.max(options.timeoutMs, 2 * leaseMs + 1000) };
}

/** Conditional writes timed at a run's start, for its lease. */
const LEASE_SAMPLES = 200;

/** A claim call that threw: every SDK attempt of it failed (an escaping fault), or its error was not a fault's. */
export interface FailedClaim {
  jobId: string;
  startedAt: number;
  endedAt: number;
}

/**
 * Why every attempt of a job expected to succeed, which failed after all of its attempts, was
 * used; undefined unless each attempt is accounted for, one by one:
 * - by the plan: one of its planned failures (`failTimes`), a planned kill;
 * - by an injected fault: its handler aborted for a lost lease with a heartbeat fault in its
 *   run (the keeper stops a handler it cannot renew); or no handler ran at all while a claim
 *   call of the job threw after one of its SDK attempts was applied (a fault with its answer
 *   lost): the claim counted the attempt, its message came back, and the next claim took the
 *   next attempt. Each such claim accounts for one attempt.
 * Anything else (an abort with no heartbeat fault in it, a failure beyond the planned ones, an
 * attempt with no handler and no lost claim) is not recognised: the run reports a violation.
 */
export function attemptsUsedUp(
  job: PlannedJob,
  item: Job,
  executions: readonly Execution[],
  faults: readonly FaultEvent[],
  failedClaims: readonly FailedClaim[],
): string | undefined {
  if (job.expected !== 'succeeded' || item.state !== 'failed' || item.attempts < item.maxAttempts) return undefined;
  const faultIn = (op: string, from: number, to: number, phase?: 'after') =>
    faults.some(
      (e) =>
        e.jobId === job.id &&
        e.op === op &&
        e.kind !== 'latency' &&
        (phase === undefined || e.phase === phase) &&
        e.at >= from &&
        e.at <= to,
    );
  let lostClaims = failedClaims.filter(
    (c) => c.jobId === job.id && faultIn('UpdateItem:claim', c.startedAt, c.endedAt, 'after'),
  ).length;
  const used = { failures: 0, kills: 0, heartbeats: 0, claims: 0 };
  const byAttempt = new Map(executions.filter((e) => e.jobId === job.id).map((e) => [e.attempt, e]));
  for (let attempt = 1; attempt <= item.attempts; attempt++) {
    const run = byAttempt.get(attempt);
    if (!run) {
      if (lostClaims === 0) return undefined;
      lostClaims -= 1;
      used.claims += 1;
    } else if (run.end === 'failed' && used.failures < (job.payload.failTimes ?? 0)) {
      used.failures += 1;
    } else if (run.end === 'killed' && job.payload.killOnAttempts?.includes(attempt)) {
      used.kills += 1;
    } else if (
      run.end === 'aborted' &&
      faultIn('UpdateItem:heartbeat', run.startedAt, run.endedAt ?? Number.POSITIVE_INFINITY)
    ) {
      used.heartbeats += 1;
    } else {
      return undefined;
    }
  }
  const parts = [
    used.failures > 0 ? `${used.failures} planned failure${used.failures > 1 ? 's' : ''}` : '',
    used.kills > 0 ? `${used.kills} planned kill${used.kills > 1 ? 's' : ''}` : '',
    used.claims > 0 ? `${used.claims} claims applied, their answers lost on every SDK attempt` : '',
    used.heartbeats > 0 ? `${used.heartbeats} lost its lease to heartbeat faults` : '',
  ].filter(Boolean);
  return `every attempt used by the plan or an injected fault: ${parts.join('; ')}`;
}

/** The jobs of a run, from its seeded randomness. */
export function planChaosJobs(options: ChaosOptions, random: () => number, types: string[]): PlannedJob[] {
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const jobs: PlannedJob[] = [];
  for (let i = 0; i < options.jobs; i++) {
    const r = random();
    const behaviour: Behaviour =
      r < 0.35 ? 'succeed' : r < 0.6 ? 'sleep' : r < 0.65 ? 'long' : r < 0.9 ? 'flaky' : 'always-fail';
    const payload: ProbePayload = {};
    let attemptsNeeded = 1;
    switch (behaviour) {
      case 'succeed':
        payload.sleepMs = int(0, 30);
        break;
      case 'sleep':
        payload.sleepMs = int(100, 1500);
        break;
      case 'long': // longer than the lease: only heartbeats keep it
        payload.sleepMs = int(
          Math.round(options.leaseMs * 1.2),
          Math.min(options.timeoutMs - 1000, options.leaseMs * 2),
        );
        break;
      case 'flaky':
        payload.failTimes = int(1, 2);
        payload.sleepMs = int(0, 200);
        attemptsNeeded = payload.failTimes + 1;
        break;
      case 'always-fail':
        payload.alwaysFail = true;
        payload.sleepMs = int(0, 100);
        break;
    }
    let kills = 0;
    if (random() < options.killRate) {
      kills = 1;
      payload.killOnAttempts = [behaviour === 'always-fail' ? int(1, 2) : int(1, attemptsNeeded)];
      payload.killAfterMs = int(0, Math.round(options.leaseMs * 0.75));
    }
    // Headroom of 2 attempts for attempts that faults may use up (a claim applied but
    // reported failed after SDK retries, a result write lost after SDK retries).
    const maxAttempts = behaviour === 'always-fail' ? int(2, 3) : attemptsNeeded + kills + 2;
    const job: PlannedJob = {
      id: `chaos-${i.toString().padStart(5, '0')}-${Math.floor(random() * 1e9).toString(36)}`,
      type: types[i % types.length] ?? 'chaos-a',
      behaviour,
      payload,
      maxAttempts,
      expected: behaviour === 'always-fail' ? 'failed' : 'succeeded',
    };
    if (random() < options.duplicateRate) job.duplicate = { afterMs: int(0, 4000), delaySeconds: int(0, 2) };
    jobs.push(job);
  }
  // A small run can draw fewer kills than its coverage check needs: kill more on a first attempt.
  if (options.killRate > 0) {
    let planned = jobs.filter((j) => j.payload.killOnAttempts).length;
    for (const job of jobs) {
      if (planned >= MIN_PLANNED_KILLS) break;
      if (job.payload.killOnAttempts || job.behaviour === 'always-fail') continue;
      job.payload.killOnAttempts = [1];
      job.payload.killAfterMs = int(0, Math.round(options.leaseMs * 0.75));
      job.maxAttempts += 1;
      planned += 1;
    }
  }
  return jobs;
}

interface Container {
  handler: SqsLambdaHandler;
}

interface LogEntry {
  t: number;
  message: string;
  level: string;
  fields: Record<string, unknown>;
}

/**
 * Runs one chaos experiment and checks it. Never throws for broken guarantees: they are in
 * `report.violations` (and `report.ok` is false).
 */
export async function runChaos(input: Partial<ChaosOptions> = {}): Promise<ChaosReport> {
  const seed = input.seed ?? Date.now() % 2 ** 31;
  const base = { ...DEFAULT_CHAOS, ...input, seed };
  const options: ChaosOptions = { ...base, stallMs: input.stallMs ?? base.visibilitySeconds * 3000 + base.leaseMs };
  const progress = options.progress ?? (() => {});
  const random = seeded(seed);
  const started = Date.now();
  const types = Array.from({ length: options.types }, (_, i) => `chaos-${String.fromCharCode(97 + i)}`);

  // ---- observation ------------------------------------------------------------------------
  const tracker = new ProbeTracker();
  const deadZones = new DeadZones();
  const faults = new FaultInjector({
    random: seeded(seed ^ 0x5eed),
    deadZones,
    profile: {
      rate: options.faultRate,
      escapeRate: options.escapeRate,
      afterShare: options.afterShare,
      escapeOps: (call: CallInfo) => options.escapeFinalWrites || !FINAL_WRITES.has(call.op),
      // `idempotent`: calls the runtime cannot safely see replayed only fail before being applied.
      afterOps: (call: CallInfo) => options.lostResponses === 'all' || !NON_IDEMPOTENT_AFTER.has(call.op),
    },
  });
  const logsByJob = new Map<string, LogEntry[]>();
  const logCounts = new Map<string, number>();
  const logSamples = new Map<string, string[]>();
  const logger = createLogger({
    level: 'info',
    sink: (line) => {
      const parsed = JSON.parse(line) as { message: string; level: string; jobId?: string; time?: string } & Record<
        string,
        unknown
      >;
      const { message, level, jobId, time: _time, ...fields } = parsed;
      logCounts.set(message, (logCounts.get(message) ?? 0) + 1);
      if (level === 'warn' || level === 'error') {
        const list = logSamples.get(message) ?? [];
        if (list.length < 3)
          list.push(
            `${jobId ?? '-'} ${String(fields.errorName ?? '')}: ${String(fields.errorMessage ?? fields.reason ?? '')}`.slice(
              0,
              300,
            ),
          );
        logSamples.set(message, list);
      }
      if (jobId) {
        let list = logsByJob.get(jobId);
        if (!list) {
          list = [];
          logsByJob.set(jobId, list);
        }
        list.push({ t: Date.now(), message, level, fields });
      }
    },
  });

  const storeStats = {
    claims: {} as Record<string, number>,
    takeovers: 0,
    retryWrites: 0,
    terminalWrites: new Map<string, number>(),
    takeoverJobs: new Set<string>(),
    failedClaims: [] as FailedClaim[],
    /** Real ms of each heartbeat call (its SDK retries included) that returned. */
    heartbeatMs: [] as number[],
  };
  const bump = (record: Record<string, number>, key: string) => {
    record[key] = (record[key] ?? 0) + 1;
  };
  const observe = (store: JobStore): JobStore =>
    interceptStore(store, {
      claim: async (original, claimInput) => {
        const startedAt = Date.now();
        const result = await original(claimInput).catch((error: unknown) => {
          storeStats.failedClaims.push({ jobId: claimInput.id, startedAt, endedAt: Date.now() });
          throw error;
        });
        bump(storeStats.claims, result.kind);
        if (result.kind === 'claimed') {
          const k = result.job.attempts;
          if (k > 1 && !result.job.errors.some((e) => e.attempt === k - 1)) {
            storeStats.takeovers += 1;
            storeStats.takeoverJobs.add(result.job.id);
          }
        }
        return result;
      },
      heartbeat: async (original, heartbeatInput) => {
        const startedAt = Date.now();
        await original(heartbeatInput);
        storeStats.heartbeatMs.push(Date.now() - startedAt);
      },
      retry: async (original, retryInput) => {
        await original(retryInput);
        storeStats.retryWrites += 1;
      },
      succeed: async (original, succeedInput) => {
        await original(succeedInput);
        storeStats.terminalWrites.set(
          succeedInput.job.id,
          (storeStats.terminalWrites.get(succeedInput.job.id) ?? 0) + 1,
        );
      },
      fail: async (original, failInput) => {
        await original(failInput);
        storeStats.terminalWrites.set(failInput.job.id, (storeStats.terminalWrites.get(failInput.job.id) ?? 0) + 1);
      },
    });

  // ---- platform ---------------------------------------------------------------------------
  const aws: LocalAws = await startLocalAws(
    options.dynamodbEndpoint ? { dynamodbEndpoint: options.dynamodbEndpoint } : {},
  );
  // The lease by the production rule, from conditional writes timed on this storage.
  const writeLatency = await measureWriteLatency(aws.endpoints.dynamodb, aws.region, LEASE_SAMPLES);
  Object.assign(options, chaosLease(options, writeLatency.p99));
  if (input.stallMs === undefined) options.stallMs = options.visibilitySeconds * 3000 + options.leaseMs;
  progress(
    `chaos: conditional writes p50 ${writeLatency.p50} ms, p99 ${writeLatency.p99} ms: lease ${options.leaseMs} ms, timeout ${options.timeoutMs} ms`,
  );
  const jobs = planChaosJobs(options, random, types);
  const byId = new Map(jobs.map((j) => [j.id, j]));
  const inspect = localClients(aws);
  const runners: QueueRunner[] = [];
  const loopDelay = monitorEventLoopDelay({ resolution: 20 });
  loopDelay.enable();
  let killedInvocations = 0;
  const enqueueStats = { retried: 0, errors: 0, byStatus: {} as Record<number, number>, latencies: [] as number[] };
  let duplicatesSent = 0;
  let duplicatesPending = 0;
  const dupTimers = new Set<NodeJS.Timeout>();
  let platformStop: (() => Promise<void>) | undefined;
  const ownedClients: AwsClients[] = [];
  try {
    aws.applyEnv();
    const clients = createAwsClients();
    faults.install(clients.dynamo, 'dynamodb');
    faults.install(clients.sqs, 'sqs');
    const defs: JobDefinition[] = types.map((type) =>
      probeJob({
        type,
        tracker,
        deadZones,
        timeoutMs: options.timeoutMs,
        maxAttempts: 3,
        backoff: { kind: 'exponential', baseMs: 200, maxMs: 1000 },
      }),
    );
    faults.enabled = false; // deploy cleanly
    const platform = await startLocalPlatform({
      aws,
      prefix: uniquePrefix('chaos'),
      jobs: defs,
      clients,
      wrapStore: observe,
      leaseMs: options.leaseMs,
      visibilityTimeoutSeconds: options.visibilitySeconds,
      runWorkers: false,
      logger,
    });
    platformStop = () => platform.stop();
    faults.enabled = true;
    // Each concurrent invocation gets a "Lambda container" of its own: its own SDK clients
    // (with faults), worker and lease owner, used by one invocation at a time. Each runner
    // (event source mapping poller) has its own SQS client too.
    const faultyClients = () => {
      const c = createAwsClients();
      faults.install(c.dynamo, 'dynamodb');
      faults.install(c.sqs, 'sqs');
      ownedClients.push(c);
      return c;
    };
    for (const def of defs) {
      const q = platform.deployment.queues[def.spec.type];
      if (!q) throw new Error(`no queues for ${def.spec.type}`);
      for (let i = 0; i < options.runnersPerQueue; i++) {
        const free: Container[] = [];
        for (let n = 0; n < options.maxConcurrency; n++) {
          const c = faultyClients();
          const worker = createWorker(def, {
            config: platform.config,
            store: observe(new DynamoJobStore(c.dynamo, platform.config.tableName)),
            queue: new SqsJobQueue(c.sqs),
            logger,
            leaseMs: options.leaseMs,
            owner: `${def.spec.type}-r${i}-c${n}`,
          });
          free.push({ handler: crashable(worker, deadZones, () => (killedInvocations += 1)) });
        }
        const handler: SqsLambdaHandler = async (event, context) => {
          const container = free.pop();
          if (!container) throw new Error('no free container (runner concurrency above the pool size)');
          try {
            return await container.handler(event, context);
          } finally {
            free.push(container);
          }
        };
        runners.push(
          startQueueRunner({
            queueUrl: q.url,
            queueArn: q.arn,
            handler,
            functionName: `${def.spec.type}-${i}`,
            batchSize: options.batchSize,
            maxConcurrency: options.maxConcurrency,
            waitTimeSeconds: 1,
            timeoutMs: options.timeoutMs + 30_000,
            sqs: faultyClients().sqs,
          }),
        );
      }
    }
    progress(
      `chaos: seed ${seed}, ${jobs.length} jobs on ${types.length} queues × ${options.runnersPerQueue} runners × ${options.maxConcurrency} concurrent batches of ≤ ${options.batchSize}`,
    );

    // ---- enqueue (through the API, whose AWS calls get faults too) --------------------------
    const enqueueStarted = Date.now();
    let next = 0;
    const enqueueOne = async (job: PlannedJob) => {
      for (let tries = 0; ; tries++) {
        const sentAt = Date.now();
        const response = await fetch(`${platform.url}/jobs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ id: job.id, type: job.type, payload: job.payload, maxAttempts: job.maxAttempts }),
        });
        await response.arrayBuffer();
        enqueueStats.latencies.push(Date.now() - sentAt);
        if (response.status === 201 || response.status === 200) break;
        enqueueStats.byStatus[response.status] = (enqueueStats.byStatus[response.status] ?? 0) + 1;
        if ((response.status === 429 || response.status >= 500) && tries < 50) {
          enqueueStats.retried += 1;
          await new Promise((r) => setTimeout(r, 50 + tries * 50));
          continue;
        }
        enqueueStats.errors += 1;
        throw new Error(`enqueue of ${job.id} answered ${response.status}`);
      }
      if (job.duplicate) {
        const dup = job.duplicate;
        duplicatesPending += 1;
        const timer = setTimeout(() => {
          dupTimers.delete(timer);
          inspect.sqs
            .send(
              new SendMessageCommand({
                QueueUrl: platform.config.routes[job.type]?.queueUrl ?? '',
                MessageBody: JSON.stringify({ v: 1, id: job.id, type: job.type }),
                ...(dup.delaySeconds ? { DelaySeconds: dup.delaySeconds } : {}),
              }),
            )
            .then(() => {
              duplicatesSent += 1;
            })
            .finally(() => {
              duplicatesPending -= 1;
            });
        }, dup.afterMs);
        dupTimers.add(timer);
      }
    };
    await Promise.all(
      Array.from({ length: options.enqueueConcurrency }, async () => {
        while (next < jobs.length) {
          const job = jobs[next++];
          if (job) await enqueueOne(job);
        }
      }),
    );
    const enqueueMs = Date.now() - enqueueStarted;
    progress(`chaos: enqueued ${jobs.length} jobs in ${enqueueMs} ms (${enqueueStats.retried} API retries)`);

    // ---- wait until every job is terminal and every queue is empty --------------------------
    const queueUrls = Object.values(platform.deployment.queues).map((q) => q.url);
    const dlqUrls = Object.values(platform.deployment.queues).map((q) => q.dlqUrl);
    const scan = async (): Promise<Map<string, Job>> => {
      const out = new Map<string, Job>();
      let startKey: Record<string, unknown> | undefined;
      do {
        const page = await inspect.dynamo.send(
          new ScanCommand({
            TableName: platform.config.tableName,
            ConsistentRead: true,
            ...(startKey ? { ExclusiveStartKey: startKey as never } : {}),
          }),
        );
        for (const item of page.Items ?? []) {
          if (!isStatusItem(item)) continue; // a job's error item
          const job = fromItem(item);
          out.set(job.id, job);
        }
        startKey = page.LastEvaluatedKey;
      } while (startKey);
      return out;
    };

    let stored = new Map<string, Job>();
    let lastSignature = '';
    let lastChange = Date.now();
    let lastProgress = 0;
    let stalled = false;
    let timedOut = false;
    for (;;) {
      await new Promise((r) => setTimeout(r, 1000));
      stored = await scan();
      const states: Record<string, number> = {};
      for (const job of jobs) {
        const state = stored.get(job.id)?.state ?? 'missing';
        states[state] = (states[state] ?? 0) + 1;
      }
      const open = jobs.filter((j) => !isSettled(stored.get(j.id)?.state ?? 'queued')).length;
      const messages = await messagesIn(inspect.sqs, queueUrls);
      const signature = `${JSON.stringify(states)}|${messages}|${tracker.jobs.size}`;
      if (signature !== lastSignature) {
        lastSignature = signature;
        lastChange = Date.now();
      }
      if (Date.now() - lastProgress > 5000) {
        lastProgress = Date.now();
        progress(
          `chaos: ${Math.round((Date.now() - started) / 1000)} s  ${JSON.stringify(states)}  messages ${messages}  faults ${faults.events.length}`,
        );
      }
      if (open === 0 && messages === 0 && duplicatesPending === 0 && dupTimers.size === 0) break;
      if (
        messages === 0 &&
        duplicatesPending === 0 &&
        dupTimers.size === 0 &&
        Date.now() - lastChange > options.stallMs
      ) {
        stalled = true;
        break;
      }
      if (Date.now() - started > options.deadlineMs) {
        timedOut = true;
        break;
      }
    }
    const runMs = Date.now() - started;

    // ---- stop and check ---------------------------------------------------------------------
    for (const timer of dupTimers) clearTimeout(timer);
    faults.enabled = false;
    await Promise.all(runners.map((r) => r.stop()));
    stored = await scan();
    const dlqMessages = await messagesIn(inspect.sqs, dlqUrls);
    const dlqBodies: string[] = [];
    if (dlqMessages > 0) {
      for (const url of dlqUrls) {
        const out = await inspect.sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10 }));
        for (const m of out.Messages ?? []) dlqBodies.push(m.Body ?? '');
      }
    }
    loopDelay.disable();

    // The lease rule during the run: a heartbeat slower than a third of the lease (the keeper's
    // margin) can lose an attempt with no fault injected; the machine, not the runtime.
    const heartbeat = percentiles(storeStats.heartbeatMs);
    const slowHeartbeats = storeStats.heartbeatMs.filter((ms) => ms > options.leaseMs / 3).length;
    const violations: Violation[] = [];
    const atLeastOnce: Violation[] = [];
    const story = (id: string): string =>
      storyOf(id, byId.get(id), stored.get(id), tracker, faults, logsByJob.get(id) ?? [], started);
    const violate = (jobId: string, rule: string, detail: string) => {
      const text = story(jobId);
      violations.push({ jobId, rule, detail, cause: diagnose(rule, detail, text, slowHeartbeats), story: text });
    };

    const finalStates: Record<string, number> = {};
    for (const job of jobs) {
      const item = stored.get(job.id);
      const trace = tracker.jobs.get(job.id);
      const ends = countEnds(trace);
      const state = item?.state ?? 'missing';
      finalStates[state] = (finalStates[state] ?? 0) + 1;
      if (!item || !isTerminal(item.state)) {
        violate(job.id, 'terminal', `not terminal: ${state}`);
        continue;
      }
      if (item.state !== job.expected) {
        const detail = `expected ${job.expected}, got ${item.state} after ${item.attempts}/${item.maxAttempts} attempts`;
        // Attempts used up by the plan and the injected faults (lost-answer claims, heartbeat
        // faults), each one accounted for: the job legitimately fails. Counted, not a violation.
        const usedUp = attemptsUsedUp(job, item, trace?.executions ?? [], faults.events, storeStats.failedClaims);
        if (usedUp) {
          atLeastOnce.push({ jobId: job.id, rule: 'outcome', detail, cause: usedUp, story: story(job.id) });
        } else {
          violate(job.id, 'outcome', detail);
        }
      }
      if ((storeStats.terminalWrites.get(job.id) ?? 0) > 1) {
        violate(job.id, 'one terminal state', `${storeStats.terminalWrites.get(job.id)} terminal writes were accepted`);
      }
      if (item.attempts > item.maxAttempts || ends.started > item.maxAttempts) {
        violate(
          job.id,
          'attempts ≤ maxAttempts',
          `stored ${item.attempts}, handler starts ${ends.started}, max ${item.maxAttempts}`,
        );
      }
      if ((trace?.maxRunning ?? 0) > 1) {
        violate(job.id, 'never two handlers at once', `${trace?.maxRunning} handlers ran at once`);
      }
      if (item.state === 'succeeded') {
        const resultAttempt = (item.result as { attempt?: number } | undefined)?.attempt;
        const completedAttempts = (trace?.executions ?? []).filter((e) => e.end === 'completed').map((e) => e.attempt);
        if (resultAttempt === undefined || !completedAttempts.includes(resultAttempt)) {
          violate(
            job.id,
            'result from a completed attempt',
            `result of attempt ${resultAttempt}, completed: ${completedAttempts.join(',')}`,
          );
        }
        if (ends.completed !== 1) {
          const lostSuccess = faults.events.some(
            (e) => e.jobId === job.id && e.op === 'UpdateItem:succeed' && e.escaping && e.phase === 'before',
          );
          const text = story(job.id);
          const detail = `${ends.completed} completions`;
          const entry = {
            jobId: job.id,
            rule: 'completed exactly once',
            detail,
            cause: lostSuccess
              ? 'success write failed on every SDK attempt and every persist() try'
              : diagnose('completed exactly once', detail, text),
            story: text,
          };
          if (ends.completed > 1 && lostSuccess) atLeastOnce.push(entry);
          else violations.push(entry);
        }
      }
      if (item.state === 'failed') {
        const hooks = trace?.onFailure.length ?? 0;
        if (hooks !== 1) violate(job.id, 'onFailure once', `onFailure called ${hooks} times`);
        if (job.behaviour === 'always-fail' && item.attempts !== item.maxAttempts) {
          violate(job.id, 'failed after exactly maxAttempts', `${item.attempts}/${item.maxAttempts}`);
        }
      }
    }
    for (const overlap of tracker.overlaps) {
      if (!violations.some((v) => v.jobId === overlap.jobId && v.rule === 'never two handlers at once')) {
        violate(
          overlap.jobId,
          'never two handlers at once',
          `attempt ${overlap.attempt} started while ${overlap.runningAttempts.join(',')} ran`,
        );
      }
    }

    // ---- counts -----------------------------------------------------------------------------
    const behaviours: Record<string, number> = {};
    for (const job of jobs) behaviours[job.behaviour] = (behaviours[job.behaviour] ?? 0) + 1;
    const faultsByOp: Record<string, number> = {};
    const escapingByOp: Record<string, number> = {};
    for (const e of faults.events) {
      faultsByOp[e.op] = (faultsByOp[e.op] ?? 0) + 1;
      if (e.escaping && e.attempt === 1) escapingByOp[e.op] = (escapingByOp[e.op] ?? 0) + 1;
    }
    const executions = [...tracker.jobs.values()].flatMap((t) => t.executions);
    const ends = { completed: 0, failed: 0, aborted: 0, killed: 0, open: 0 };
    for (const e of executions) ends[e.end ?? 'open'] += 1;
    const callsTotal = [...faults.calls.values()].reduce((a, b) => a + b, 0);
    const runnerStats = runners.reduce(
      (acc, r) => ({
        invocations: acc.invocations + r.stats.invocations,
        messages: acc.messages + r.stats.messages,
        failures: acc.failures + r.stats.failures,
      }),
      { invocations: 0, messages: 0, failures: 0 },
    );
    const log = (message: string) => logCounts.get(message) ?? 0;
    const logPrefix = (prefix: string) =>
      [...logCounts].filter(([message]) => message.startsWith(prefix)).reduce((sum, [, n]) => sum + n, 0);
    const counts: ChaosReport['counts'] = {
      jobs: jobs.length,
      behaviours,
      finalStates,
      handlerExecutions: executions.length,
      executionEnds: ends,
      awsCalls: callsTotal,
      faultsInjected: faults.events.length,
      faultsByKind: faults.summary(),
      faultsByOp,
      escapingCallsByOp: escapingByOp,
      duplicatesSent,
      killedAttempts: ends.killed,
      killedInvocations,
      takeovers: storeStats.takeovers,
      retries: storeStats.retryWrites,
      claims: storeStats.claims,
      busyDuplicatesDiscarded: log('duplicate delivery of a job running under a live lease; discarding it'),
      finishedDuplicatesDiscarded: log('duplicate delivery of a finished job; discarding it'),
      lateWritesRejected: log('late write rejected: the lease was taken over or the job changed'),
      leaseLostAborts: logPrefix('lease lost'),
      heartbeatFailures: log('heartbeat failed; will try again'),
      heartbeatMs: heartbeat,
      leaseOverHeartbeatP99: Number((options.leaseMs / Math.max(1, heartbeat.p99 ?? 1)).toFixed(1)),
      heartbeatsOverAThirdOfTheLease: slowHeartbeats,
      recordsLeftForRedelivery: log('could not process message; it will be delivered again'),
      retryDelayNotSet: log('could not set retry delay on the message; it returns after the queue visibility timeout'),
      enqueueApiRetries: enqueueStats.retried,
      enqueueApiAnswers: Object.fromEntries(Object.entries(enqueueStats.byStatus).map(([k, v]) => [k, v])),
      enqueueLatencyMs: percentiles(enqueueStats.latencies),
      runnerInvocations: runnerStats.invocations,
      runnerMessages: runnerStats.messages,
      runnerRecordsNotDeleted: runnerStats.failures,
      dlqMessages,
      swallowedCallsOfKilledWorkers: deadZones.swallowed,
      eventLoopDelayP99Ms: Math.round(loopDelay.percentile(99) / 1e6),
      eventLoopDelayMaxMs: Math.round(loopDelay.max / 1e6),
      enqueueMs,
      runMs,
      stalled: stalled ? 'yes' : 'no',
      timedOut: timedOut ? 'yes' : 'no',
    };
    const durationMs = Date.now() - started;
    const report: ChaosReport = {
      ok: violations.length === 0 && !timedOut,
      seed,
      options: { ...options, progress: undefined } as Omit<ChaosOptions, 'progress'>,
      violations,
      atLeastOnce,
      counts,
      durationMs,
      text: '',
    };
    report.text = formatReport(report, dlqBodies, logSamples);
    return report;
  } finally {
    for (const timer of dupTimers) clearTimeout(timer);
    loopDelay.disable();
    await Promise.all(runners.map((r) => r.stop()));
    await platformStop?.();
    for (const c of ownedClients) {
      c.dynamo.destroy();
      c.sqs.destroy();
      c.scheduler.destroy();
    }
    inspect.destroy();
    await aws.stop();
  }
}

/**
 * Names the sequence behind a violation when it is one the driver knows (see the failing
 * tests in test/integration/lifecycle.test.ts, one per sequence).
 */
function diagnose(rule: string, detail: string, story: string, slowHeartbeats = 0): string {
  const lostResponse = (op: string) => new RegExp(`fault: \\S+ UpdateItem:${op} \\w+/after`).test(story);
  if (rule === 'terminal') {
    if (
      detail.endsWith('running') &&
      lostResponse('claim') &&
      story.includes('duplicate delivery of a job running under a live lease')
    ) {
      return 'claim applied, response lost, SDK retried: the worker took its own claim for a live duplicate ("busy") and deleted the only message';
    }
    if (detail.endsWith('retrying') && lostResponse('retry') && story.includes('late write rejected')) {
      return 'retry write applied, response lost, SDK retried: the refused replay was read as a lost lease and the message deleted';
    }
    if (detail.endsWith('retrying') && story.includes('could not set retry delay')) {
      return 'the message was redelivered while its attempt ran, discarded as "busy" (deleting it), and the retry had no message left';
    }
  }
  if (rule === 'onFailure once' && lostResponse('fail') && story.includes('late write rejected')) {
    return 'fail write applied, response lost, SDK retried: the refused replay was read as a lost lease, so onFailure was skipped';
  }
  if (rule === 'never two handlers at once' && story.includes('heartbeat failed')) {
    return 'heartbeats failed past the lease: the handler kept running while another worker took over';
  }
  if (rule === 'outcome' && slowHeartbeats > 0 && story.includes('lease lost')) {
    return `not recognised; leases were lost while ${slowHeartbeats} heartbeats took over a third of the lease: the machine answered slower than this lease allows (the harness's lease rule broke; rerun on a quieter machine or with a longer --lease-ms)`;
  }
  return 'not recognised: read the story';
}

function percentiles(values: number[]): Record<string, number> {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1) ?? 0 };
}

/** What happened to one job, for a violation report. */
function storyOf(
  id: string,
  planned: PlannedJob | undefined,
  item: Job | undefined,
  tracker: ProbeTracker,
  faults: FaultInjector,
  logs: LogEntry[],
  t0: number,
): string {
  const at = (t: number) => `+${((t - t0) / 1000).toFixed(2)}s`;
  const lines: string[] = [];
  lines.push(
    `  plan: ${planned?.behaviour} ${JSON.stringify(planned?.payload)} maxAttempts ${planned?.maxAttempts}${planned?.duplicate ? ` duplicate ${JSON.stringify(planned.duplicate)}` : ''}`,
  );
  lines.push(
    `  item: ${item ? `${item.state} attempts ${item.attempts}/${item.maxAttempts} token ${item.leaseToken} owner ${item.leaseOwner ?? '-'} leaseExpiresAt ${item.leaseExpiresAt ? at(item.leaseExpiresAt) : '-'} errors ${JSON.stringify(item.errors.map((e) => [e.attempt, e.reason]))} result ${JSON.stringify(item.result ?? null)}` : 'missing'}`,
  );
  for (const e of tracker.jobs.get(id)?.executions ?? []) {
    lines.push(
      `  execution: attempt ${e.attempt} ${at(e.startedAt)} → ${e.endedAt ? at(e.endedAt) : 'open'} ${e.end ?? ''}${e.abortReason ? ` (${e.abortReason})` : ''}`,
    );
  }
  for (const f of faults.events.filter((e) => e.jobId === id)) {
    lines.push(
      `  fault: ${at(f.at)} ${f.op} ${f.kind}/${f.phase}${f.escaping ? ' ESCAPING' : ''} sdk-attempt ${f.attempt}`,
    );
  }
  for (const l of logs) {
    const fields = ['attempt', 'token', 'state', 'owner', 'errorName', 'reason']
      .filter((k) => l.fields[k] !== undefined)
      .map((k) => `${k}=${String(l.fields[k])}`)
      .join(' ');
    lines.push(`  log: ${at(l.t)} ${l.level} ${l.message} ${fields}`);
  }
  return lines.join('\n');
}

function formatReport(report: ChaosReport, dlqBodies: string[], logSamples: Map<string, string[]>): string {
  const c = report.counts;
  const out: string[] = [];
  out.push(
    `chaos run: seed ${report.seed}, ${c.jobs} jobs, ${(report.durationMs / 1000).toFixed(1)} s — ${report.ok ? 'ALL GUARANTEES HELD' : `${report.violations.length} VIOLATIONS`}`,
  );
  const o = report.options;
  out.push(
    `  setup: ${o.types} queues × ${o.runnersPerQueue} runners × ${o.maxConcurrency} concurrent batches (≤ ${o.batchSize}); lease ${o.leaseMs} ms, visibility ${o.visibilitySeconds} s; fault rate ${o.faultRate}/attempt, escaping ${o.escapeRate}/call (final writes ${o.escapeFinalWrites ? 'included' : 'excluded'}), lost responses ${o.lostResponses}; kills ${o.killRate}, duplicates ${o.duplicateRate}`,
  );
  for (const [key, value] of Object.entries(c)) {
    out.push(`  ${key}: ${typeof value === 'object' ? JSON.stringify(value) : value}`);
  }
  if (dlqBodies.length > 0) out.push(`  DLQ bodies (first 10): ${dlqBodies.slice(0, 10).join(' | ')}`);
  out.push('  warnings/errors logged by the runtime (count: samples):');
  for (const [message, samples] of logSamples) out.push(`    ${message}\n      ${samples.join('\n      ')}`);
  if (report.atLeastOnce.length > 0) {
    out.push(
      `  explained by injected faults (not violations): ${report.atLeastOnce.length}: ${[...new Set(report.atLeastOnce.map((v) => v.cause))].join(' | ')}`,
    );
    for (const v of report.atLeastOnce.slice(0, 3)) out.push(`  - ${v.jobId}: ${v.detail}: ${v.cause}\n${v.story}`);
  }
  const byRule = new Map<string, Violation[]>();
  for (const v of report.violations) byRule.set(v.rule, [...(byRule.get(v.rule) ?? []), v]);
  for (const [rule, list] of byRule) {
    out.push(`  VIOLATED "${rule}": ${list.length} jobs`);
    const byCause = new Map<string, Violation[]>();
    for (const v of list) byCause.set(v.cause, [...(byCause.get(v.cause) ?? []), v]);
    for (const [cause, same] of byCause) {
      out.push(`    ${same.length} × ${cause}`);
      for (const v of same.slice(0, 2)) out.push(`    - ${v.jobId}: ${v.detail}\n${v.story.replaceAll(/^/gm, '    ')}`);
    }
  }
  return out.join('\n');
}
