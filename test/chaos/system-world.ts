/**
 * The system under test of a system chaos run, on local AWS: the API (Function URL server)
 * and the Scheduler stand-in on the driven clock, queue runners whose worker containers each
 * have a skewed clock, two supervisors, fault injectors on every SDK client (with latency on
 * the API's), and a Scheduler delivery that drops, delays or duplicates fires.
 */

import { type AttributeValue, ScanCommand } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { type AwsClients, createAwsClients } from '../../shared/aws/clients';
import { DynamoDebouncer } from '../../shared/aws/dynamo-debouncer';
import { DynamoEventWaits } from '../../shared/aws/dynamo-event-waits';
import { DynamoFlowSlots } from '../../shared/aws/dynamo-flow-slots';
import { DynamoJobControl } from '../../shared/aws/dynamo-job-control';
import { DynamoJobGraph } from '../../shared/aws/dynamo-job-graph';
import { DynamoJobStore } from '../../shared/aws/dynamo-job-store';
import { DynamoJournal, journalEntryOf } from '../../shared/aws/dynamo-journal';
import { DynamoPacer } from '../../shared/aws/dynamo-pacer';
import { DynamoScheduleStore } from '../../shared/aws/dynamo-schedule-store';
import { fromItem, isStatusItem } from '../../shared/aws/job-item';
import { EventBridgeJobScheduler } from '../../shared/aws/scheduler-job-scheduler';
import { SqsJobQueue } from '../../shared/aws/sqs-job-queue';
import type { Job } from '../../shared/core/job';
import { createLogger, type Logger } from '../../shared/logger';
import { type BatchJobDefinition, createBatchWorker } from '../../shared/runtime/batch-worker';
import type { WorkerDeps } from '../../shared/runtime/delivery/kit';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { createWorker } from '../../shared/runtime/worker';
import type { Schedule } from '../../shared/schedules/model';
import type { SupervisorOptions } from '../../shared/supervisor/plan';
import type { SupervisorReport } from '../../shared/supervisor/run';
import { type LocalAws, localClients, startLocalAws } from '../local-aws/index';
import { type QueueRunner, type SqsLambdaHandler, startQueueRunner } from '../local-aws/lambda-runner';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import type { Deliver } from '../local-aws/scheduler-standin';
import { type LocalSupervisor, startLocalSupervisor } from '../local-aws/supervisor-loop';
import { crashable, type DeadZones, type FaultInjector, type Service } from '../support/faults';
import { messagesIn } from '../support/queues';
import { DrivenClock, SkewedClock } from './driven-clock';
import { seeded } from './seeded';
import type { SystemObserver } from './system-observer';

/** Settings of the world. */
export interface WorldOptions {
  seed: number;
  runnersPerQueue: number;
  maxConcurrency: number;
  batchSize: number;
  leaseMs: number;
  visibilitySeconds: number;
  /** Each worker's clock is the driven clock plus a fixed skew in [-maxSkewMs, +maxSkewMs]. */
  maxSkewMs: number;
  /** Probabilities per Scheduler fire. */
  fireDropRate: number;
  fireDelayRate: number;
  fireDuplicateRate: number;
  /** Real-time pause between two passes of each supervisor. */
  supervisorIntervalMs: number;
  /** Days a finished job is kept, so that a run can reuse ids after it on the driven clock. @default 30 */
  retentionDays?: number;
  /** Overrides of the supervisors' options (e.g. `maxMinutesPerRun`). */
  supervisorOptions?: Partial<SupervisorOptions>;
  dynamodbEndpoint?: string;
}

/** Counters of the Scheduler delivery faults. */
export interface FireStats {
  delivered: number;
  dropped: number;
  delayed: number;
  duplicated: number;
  /** Deliveries still waiting on a timer. */
  pending: number;
  /** Fires seen, by kind of target (`job`, `retry`, `recurring`). */
  byKind: Record<string, number>;
  /** What became of each recurring fire, by Scheduler schedule name (`_s.<name>`), for stories. */
  fates: Map<string, string[]>;
}

/** Totals of the supervisors' passes. */
export interface SupervisorStats {
  passes: number;
  /** Passes that threw (their error is logged by the supervisor; the next pass retries). */
  failedPasses: number;
  minutesRead: number;
  resent: number;
  fired: number;
  skipped: number;
  failedItems: number;
  totalMs: number;
  maxMs: number;
  /** Wall-clock ms summed over passes, per phase of a pass. */
  phaseMs: Record<string, number>;
}

/** A running world. */
export interface World {
  aws: LocalAws;
  platform: LocalPlatform;
  driven: DrivenClock;
  inspect: ReturnType<typeof localClients>;
  deadZones: DeadZones;
  fireStats: FireStats;
  /** Fault injection on Scheduler fires is on. */
  fireFaults: { enabled: boolean };
  /** Skews of the worker runners (ms) and of the two supervisors. */
  skews: { workers: number[]; supervisors: number[] };
  queueUrls: string[];
  dlqUrls: string[];
  killedInvocations: () => number;
  startRunners(): void;
  stopRunners(): Promise<void>;
  startSupervisors(): void;
  stopSupervisors(): Promise<void>;
  /** One pass of each supervisor, at the same time. */
  supervise(): Promise<SupervisorReport[]>;
  /** Totals of every supervisor pass (explicit and background). */
  supervisorStats: SupervisorStats;
  /** Background passes completed so far, per supervisor, that started at or after real time `since`. */
  passesStartedSince(since: number): number[];
  /** Messages of the job queues: visible now, hidden but back within `withinMs` (real), hidden longer. */
  queueState(withinMs: number): { visible: number; soon: number; later: number };
  runnerStats(): { invocations: number; messages: number; failures: number };
  scanJobs(): Promise<Map<string, Job>>;
  /** The recorded step results (`ctx.step`) of every job: job id → step name → value. */
  /** Each job's recorded steps, in the journal series `seriesOf` names (undefined: its first). */
  scanSteps(seriesOf: (jobId: string) => string | undefined): Promise<Map<string, Map<string, unknown>>>;
  getSchedule(name: string): Promise<Schedule | undefined>;
  messagesIn(urls: string[]): Promise<number>;
  /** Sends a job message straight to a queue (a duplicate delivery, or a copy into a DLQ). */
  sendRaw(queueUrl: string, body: string, delaySeconds?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Deploys the job types (`defs`, probe definitions; each worker container runs a wrapped
 * copy) and starts everything but the runners and supervisors.
 */
export async function startWorld(input: {
  options: WorldOptions;
  /** Single-job definitions, and batch ones (`defineBatchJob`'s: run by the batch worker, never killed). */
  defs: (JobDefinition | BatchJobDefinition)[];
  /** The killed-worker scopes the probe definitions use. */
  deadZones: DeadZones;
  observer: SystemObserver;
  apiFaults: FaultInjector;
  workerFaults: FaultInjector;
  /** Faults of the supervisors' clients. */
  supervisorFaults: FaultInjector;
}): Promise<World> {
  const { options, defs, deadZones, observer, apiFaults, workerFaults, supervisorFaults } = input;
  const random = seeded(options.seed ^ 0x51de);
  const driven = new DrivenClock();
  const fireStats: FireStats = {
    delivered: 0,
    dropped: 0,
    delayed: 0,
    duplicated: 0,
    pending: 0,
    byKind: {},
    fates: new Map(),
  };
  const fireFaults = { enabled: true };
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, fn: () => Promise<void>) => {
    fireStats.pending += 1;
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn()
        .catch(() => undefined)
        .finally(() => {
          fireStats.pending -= 1;
        });
    }, ms);
    timers.add(timer);
  };
  const wrapDeliver =
    (deliver: Deliver): Deliver =>
    async (fire) => {
      const kind = fire.name.startsWith('_s.') ? 'recurring' : fire.name.startsWith('_r') ? 'retry' : 'job';
      fireStats.byKind[kind] = (fireStats.byKind[kind] ?? 0) + 1;
      const fate = (what: string) => {
        if (kind !== 'recurring') return;
        const list = fireStats.fates.get(fire.name) ?? [];
        list.push(
          `+${((Date.now() - observer.t0) / 1000).toFixed(2)}s fire ${new Date(fire.scheduledTime).toISOString()} (attempt ${fire.attempt}) ${what}`,
        );
        fireStats.fates.set(fire.name, list);
      };
      const r = random();
      if (fireFaults.enabled && r < options.fireDropRate) {
        fireStats.dropped += 1;
        fate('dropped');
        return; // Scheduler said it delivered; nothing arrives
      }
      if (fireFaults.enabled && r < options.fireDropRate + options.fireDelayRate) {
        fireStats.delayed += 1;
        const ms = 500 + Math.floor(random() * 8000);
        fate(`delayed ${ms} ms`);
        later(ms, () => deliver(fire).then(() => fate('delivered late')));
        return;
      }
      await deliver(fire);
      fireStats.delivered += 1;
      fate('delivered');
      if (fireFaults.enabled && r < options.fireDropRate + options.fireDelayRate + options.fireDuplicateRate) {
        fireStats.duplicated += 1;
        later(Math.floor(random() * 5000), () => deliver(fire).then(() => fate('delivered again (duplicate)')));
      }
    };
  const aws = await startLocalAws({
    clock: driven,
    autoFire: true,
    wrapDeliver,
    ...(options.dynamodbEndpoint ? { dynamodbEndpoint: options.dynamodbEndpoint } : {}),
  });
  const inspect = localClients(aws);
  const owned: AwsClients[] = [];
  const logger: Logger = createLogger({ level: 'info', sink: (line) => observer.sink(line) });
  const faulty = (faults: FaultInjector) => {
    const c = createAwsClients();
    for (const [client, service] of [
      [c.dynamo, 'dynamodb'],
      [c.sqs, 'sqs'],
      [c.scheduler, 'scheduler'],
    ] as const) {
      faults.install(client, service as Service);
    }
    owned.push(c);
    return c;
  };
  let platform: LocalPlatform | undefined;
  try {
    aws.applyEnv();
    const apiClients = faulty(apiFaults);
    apiFaults.enabled = false; // deploy cleanly
    workerFaults.enabled = false;
    platform = await startLocalPlatform({
      aws,
      prefix: uniquePrefix('syschaos'),
      jobs: defs,
      clients: apiClients,
      clock: driven,
      leaseMs: options.leaseMs,
      visibilityTimeoutSeconds: options.visibilitySeconds,
      runWorkers: false,
      logger,
      ...(options.retentionDays ? { retentionDays: options.retentionDays } : {}),
    });
  } catch (error) {
    inspect.destroy();
    await aws.stop();
    throw error;
  }
  const p = platform;
  const config = p.config;
  const skews = {
    workers: defs.flatMap(() =>
      Array.from({ length: options.runnersPerQueue }, () => Math.round((random() * 2 - 1) * options.maxSkewMs)),
    ),
    supervisors: [
      Math.round((random() * 2 - 1) * options.maxSkewMs),
      Math.round((random() * 2 - 1) * options.maxSkewMs),
    ],
  };
  // Worker containers: built once (each with its own clients, clock and owner), reused by runners.
  let killed = 0;
  const handlers: {
    def: JobDefinition | BatchJobDefinition;
    handler: SqsLambdaHandler;
    sqs: AwsClients['sqs'];
    name: string;
  }[] = [];
  defs.forEach((def, d) => {
    for (let i = 0; i < options.runnersPerQueue; i++) {
      const skew = skews.workers[d * options.runnersPerQueue + i] ?? 0;
      const clock = new SkewedClock(driven, skew);
      const free: SqsLambdaHandler[] = [];
      for (let n = 0; n < options.maxConcurrency; n++) {
        const c = faulty(workerFaults);
        const deps: WorkerDeps = {
          config,
          store: observer.observeStore(new DynamoJobStore(c.dynamo, config.tableName)),
          queue: new SqsJobQueue(c.sqs),
          scheduler: new EventBridgeJobScheduler(c.scheduler, config.scheduleGroup, config.schedulerRoleArn),
          schedules: new DynamoScheduleStore(c.dynamo, config.tableName),
          journal: new DynamoJournal(c.dynamo, config.tableName),
          graph: new DynamoJobGraph(c.dynamo, config.tableName),
          clock,
          logger,
          leaseMs: options.leaseMs,
          ...(def.spec.concurrency || def.spec.singleton
            ? { flow: new DynamoFlowSlots(c.dynamo, config.tableName) }
            : {}),
          ...(def.spec.throttle ? { pacer: observer.observePacer(new DynamoPacer(c.dynamo, config.tableName)) } : {}),
          ...(def.spec.debounce ? { debouncer: new DynamoDebouncer(c.dynamo, config.tableName) } : {}),
          ...(def.spec.singleton?.mode === 'cancel-running'
            ? { control: new DynamoJobControl(c.dynamo, config.tableName) }
            : {}),
          ...(def.spec.waitsFor ? { eventWaits: new DynamoEventWaits(c.dynamo, config.tableName) } : {}),
          owner: `${def.spec.type}-r${i}-c${n}(${skew >= 0 ? '+' : ''}${skew}ms)`,
        };
        // a batch worker gets its records together (crashable would run each alone); its jobs are not killed
        free.push(
          'runBatch' in def
            ? createBatchWorker(observer.wrapBatch(def, driven, skew), deps)
            : crashable(createWorker(observer.wrap(def, driven, skew), deps), deadZones, () => (killed += 1)),
        );
      }
      const handler: SqsLambdaHandler = async (event, context) => {
        const container = free.pop();
        if (!container) throw new Error('no free container (runner concurrency above the pool size)');
        try {
          return await container(event, context);
        } finally {
          free.push(container);
        }
      };
      handlers.push({ def, handler, sqs: faulty(workerFaults).sqs, name: `${def.spec.type}-${i}` });
    }
  });
  let runners: QueueRunner[] = [];
  const runnerTotals = { invocations: 0, messages: 0, failures: 0 };
  const supervisorClients = [faulty(supervisorFaults), faulty(supervisorFaults)];
  const supervisors = supervisorClients.map((clients, i) =>
    startLocalSupervisor({
      config,
      clients,
      jobs: new DynamoJobStore(clients.dynamo, config.tableName),
      schedules: new DynamoScheduleStore(clients.dynamo, config.tableName),
      clock: new SkewedClock(driven, skews.supervisors[i] ?? 0),
      logger,
      ...(options.supervisorOptions ? { settings: { options: options.supervisorOptions } } : {}),
    }),
  );
  const supervisorStats: SupervisorStats = {
    passes: 0,
    failedPasses: 0,
    minutesRead: 0,
    resent: 0,
    fired: 0,
    skipped: 0,
    failedItems: 0,
    totalMs: 0,
    maxMs: 0,
    phaseMs: {},
  };
  /** Real start times of the completed background passes, per supervisor. */
  const completed: number[][] = supervisors.map(() => []);
  const pass = async (s: LocalSupervisor): Promise<SupervisorReport | undefined> => {
    const began = Date.now();
    try {
      const r = await s.supervise();
      supervisorStats.passes += 1;
      supervisorStats.minutesRead += r.minutes;
      supervisorStats.resent += r.resent.length;
      supervisorStats.fired += r.fired.length;
      supervisorStats.skipped += r.skipped;
      supervisorStats.failedItems += r.failed;
      for (const [phase, ms] of Object.entries(r.phaseMs))
        supervisorStats.phaseMs[phase] = (supervisorStats.phaseMs[phase] ?? 0) + ms;
      return r;
    } catch {
      supervisorStats.failedPasses += 1;
      return undefined;
    } finally {
      const ms = Date.now() - began;
      supervisorStats.totalMs += ms;
      supervisorStats.maxMs = Math.max(supervisorStats.maxMs, ms);
    }
  };
  // Background passes: each supervisor passes, pauses `supervisorIntervalMs`, passes again.
  let loops: Promise<void>[] = [];
  let looping = false;
  const loop = async (i: number) => {
    const s = supervisors[i];
    if (!s) return;
    while (looping) {
      const began = Date.now();
      await pass(s);
      completed[i]?.push(began);
      if (!looping) break;
      await new Promise((resolve) => setTimeout(resolve, options.supervisorIntervalMs));
    }
  };
  const scheduleStore = new DynamoScheduleStore(inspect.dynamo, config.tableName);

  /** Every item of the table (those whose key contains `pkPart`, when given), read strongly consistent, page by page. */
  async function scanItems(pkPart?: string): Promise<Record<string, AttributeValue>[]> {
    const items: Record<string, AttributeValue>[] = [];
    let startKey: Record<string, AttributeValue> | undefined;
    do {
      const page = await inspect.dynamo.send(
        new ScanCommand({
          TableName: config.tableName,
          ConsistentRead: true,
          ...(pkPart === undefined
            ? {}
            : { FilterExpression: 'contains(pk, :part)', ExpressionAttributeValues: { ':part': { S: pkPart } } }),
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      items.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return items;
  }

  return {
    aws,
    platform: p,
    driven,
    inspect,
    deadZones,
    fireStats,
    fireFaults,
    skews,
    queueUrls: Object.values(p.deployment.queues).map((q) => q.url),
    dlqUrls: Object.values(p.deployment.queues).map((q) => q.dlqUrl),
    killedInvocations: () => killed,
    startRunners() {
      if (runners.length > 0) return;
      runners = handlers.map(({ def, handler, sqs, name }) => {
        const q = p.deployment.queues[def.spec.type];
        if (!q) throw new Error(`no queues for ${def.spec.type}`);
        return startQueueRunner({
          queueUrl: q.url,
          queueArn: q.arn,
          handler,
          functionName: name,
          batchSize: options.batchSize,
          maxConcurrency: options.maxConcurrency,
          waitTimeSeconds: 1,
          timeoutMs: def.spec.timeoutMs + 30_000,
          sqs,
        });
      });
    },
    async stopRunners() {
      const stopping = runners;
      runners = [];
      await Promise.all(stopping.map((r) => r.stop()));
      for (const r of stopping) {
        runnerTotals.invocations += r.stats.invocations;
        runnerTotals.messages += r.stats.messages;
        runnerTotals.failures += r.stats.failures;
      }
    },
    startSupervisors() {
      if (looping) return;
      looping = true;
      loops = supervisors.map((_, i) => loop(i));
    },
    async stopSupervisors() {
      looping = false;
      await Promise.all(loops);
      loops = [];
    },
    supervise: () =>
      Promise.all(supervisors.map((s) => pass(s))).then((reports) =>
        reports.filter((r): r is SupervisorReport => r !== undefined),
      ),
    supervisorStats,
    passesStartedSince: (since) => completed.map((starts) => starts.filter((t) => t >= since).length),
    queueState(withinMs) {
      const out = { visible: 0, soon: 0, later: 0 };
      const limit = Date.now() + withinMs;
      for (const q of Object.values(p.deployment.queues)) {
        const snapshot = aws.sqs.inspect(q.url.split('/').pop() ?? '');
        if (!snapshot) continue;
        out.visible += snapshot.visible;
        for (const t of snapshot.returnsAt) {
          if (t <= limit) out.soon += 1;
          else out.later += 1;
        }
      }
      return out;
    },
    runnerStats() {
      const live = runners.reduce(
        (acc, r) => ({
          invocations: acc.invocations + r.stats.invocations,
          messages: acc.messages + r.stats.messages,
          failures: acc.failures + r.stats.failures,
        }),
        { ...runnerTotals },
      );
      return live;
    },
    async scanJobs() {
      const out = new Map<string, Job>();
      for (const item of await scanItems()) {
        if (!isStatusItem(item)) continue; // not a schedule, nor a job's error or journal item
        const job = fromItem(item);
        out.set(job.id, job);
      }
      return out;
    },
    async scanSteps(seriesOf) {
      const out = new Map<string, Map<string, unknown>>();
      // journal items: pk `job#<id>#<incarnation>#journal`, or `job#<id>#<incarnation>.<series>#journal`
      // for a rerun's series; sk `step#<name>` (docs/data-model.md)
      for (const item of await scanItems('#journal')) {
        const [, id, series] = /^job#([^#]+)#[0-9a-z]+(?:\.([^#]+))?#journal$/.exec(item.pk?.S ?? '') ?? [];
        const name = /^step#(.+)$/.exec(item.sk?.S ?? '')?.[1];
        if (!id || !name || series !== seriesOf(id)) continue;
        const steps = out.get(id) ?? new Map<string, unknown>();
        steps.set(name, journalEntryOf(item).value);
        out.set(id, steps);
      }
      return out;
    },
    getSchedule: (name) => scheduleStore.get(name),
    messagesIn: (urls) => messagesIn(inspect.sqs, urls),
    async sendRaw(queueUrl, body, delaySeconds) {
      await inspect.sqs.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: body,
          ...(delaySeconds ? { DelaySeconds: delaySeconds } : {}),
        }),
      );
    },
    async stop() {
      for (const timer of timers) clearTimeout(timer);
      await Promise.all(runners.map((r) => r.stop()));
      looping = false;
      await Promise.all(loops);
      await Promise.all(supervisors.map((s) => s.stop()));
      await p.stop();
      for (const c of owned) {
        c.dynamo.destroy();
        c.sqs.destroy();
        c.scheduler.destroy();
      }
      inspect.destroy();
      await aws.stop();
    },
  };
}
