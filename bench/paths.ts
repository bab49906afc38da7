/**
 * AWS requests per job, by path, from the real code: the API handler (as the Function URL calls
 * it), the Scheduler stand-in, and the worker (as the event source mapping calls it), with every
 * SDK client counted. Jobs run one at a time so each call belongs to exactly one job.
 */
import { performance } from 'node:perf_hooks';
import type { SQSEvent } from 'aws-lambda';
import { echo } from '../functions/jobs/echo';
import { flaky } from '../functions/jobs/flaky';
import type { ManualClock } from '../shared/core/clock';
import type { JobView } from '../shared/core/job';
import { createLogger } from '../shared/logger';
import type { JobDefinition } from '../shared/runtime/job-definition';
import { type LocalAws, runOnce, uniquePrefix } from '../test/local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../test/local-aws/local-platform';
import { asActor, CallRecorder, countedClients, countedEsmClient } from './counting-middleware';
import { functionUrlEvent, responseJson } from './fixtures';
import { analyse, type Invocation, type JobTrace, type PathFigures } from './path-analysis';

export interface PathResult {
  id: string;
  label: string;
  status: 'measured' | 'not implemented yet' | 'exists, not measured';
  note?: string;
  figures?: PathFigures;
}

interface Harness {
  aws: LocalAws;
  clock: ManualClock;
  platform: LocalPlatform;
  recorder: CallRecorder;
  esm: ReturnType<typeof countedEsmClient>;
  /** When the job handler last ran (set by the wrapped definitions). */
  window: { current?: { start: number; end: number } };
}

/** The real job definition, with its handler's start and end noted. */
function timed(def: JobDefinition, window: Harness['window']): JobDefinition {
  return {
    ...def,
    run: async (payload, ctx) => {
      const span = { start: performance.now(), end: Number.POSITIVE_INFINITY };
      window.current = span;
      try {
        return await def.run(payload, ctx);
      } finally {
        span.end = performance.now();
      }
    },
  };
}

interface JobPlan {
  body: Record<string, unknown>;
  /** Worker invocations that deliver the job (2 when the first attempt fails). */
  attempts: number;
  /** Long-poll wait per receive (covers SQS delays and retry backoff). */
  waitSeconds: number;
  /** Runs between enqueue and the first receive; returns Scheduler invocations. */
  between?: (h: Harness, job: JobView) => Promise<number>;
}

async function runJob(h: Harness, plan: JobPlan): Promise<JobTrace> {
  const mark = h.recorder.mark();
  const t0 = performance.now();
  const response = await asActor('api', () => h.platform.api(functionUrlEvent('POST', '/jobs', plan.body)));
  const apiMs = performance.now() - t0;
  if (response.statusCode !== 201) throw new Error(`enqueue answered ${response.statusCode}: ${response.body}`);
  const job = responseJson<JobView>(response);
  const api = h.recorder.since(mark).filter((c) => c.actor === 'api');
  const schedulerInvocations = plan.between ? await plan.between(h, job) : 0;

  const queues = h.platform.deployment.queues[job.type];
  const worker = h.platform.workers[job.type];
  if (!queues || !worker) throw new Error(`no queue or worker for ${job.type}`);
  const invocations: Invocation[] = [];
  const esm: JobTrace['esm'] = [];
  for (let polls = 0; invocations.length < plan.attempts; polls++) {
    if (polls > 20) throw new Error(`job ${job.id} was not delivered ${plan.attempts} times`);
    const before = h.recorder.mark();
    let ms = 0;
    h.window.current = undefined;
    const result = await runOnce({
      queueUrl: queues.url,
      queueArn: queues.arn,
      functionName: `bench-${job.type}`,
      batchSize: 1,
      waitTimeSeconds: plan.waitSeconds,
      sqs: h.esm,
      handler: async (event: SQSEvent) => {
        const started = performance.now();
        try {
          return await asActor('worker', () => worker(event));
        } finally {
          ms = performance.now() - started;
        }
      },
    });
    const calls = h.recorder.since(before);
    esm.push(...calls.filter((c) => c.actor === 'esm' && !(c.operation === 'ReceiveMessage' && c.messages === 0)));
    if (result.messageIds.length === 0) continue;
    const invocation: Invocation = { calls: calls.filter((c) => c.actor === 'worker'), ms };
    if (h.window.current) invocation.handler = h.window.current;
    invocations.push(invocation);
  }
  const stored = await asActor('harness', () => h.platform.store.get(job.id));
  if (stored?.state !== 'succeeded')
    throw new Error(`job ${job.id} ended ${stored?.state ?? 'missing'}, not succeeded`);
  return { api, invocations, esm, schedulerInvocations, apiMs };
}

const PLANS: { id: string; label: string; plan: (i: number, h: Harness) => JobPlan }[] = [
  {
    id: 'immediate',
    label: 'Immediate job, succeeds',
    plan: (i) => ({ body: { type: 'echo', payload: { hello: 'world', i } }, attempts: 1, waitSeconds: 1 }),
  },
  {
    id: 'sqs-delayed',
    label: 'Delayed ≤ 15 min (SQS DelaySeconds)',
    plan: (i) => ({ body: { type: 'echo', payload: { i }, delaySeconds: 1 }, attempts: 1, waitSeconds: 3 }),
  },
  {
    id: 'scheduler-delayed',
    label: 'Delayed > 15 min (EventBridge Scheduler)',
    plan: (i, h) => ({
      // Two hours after the stand-in's clock, which earlier jobs of this path moved forward.
      body: {
        type: 'echo',
        payload: { i },
        runAt: new Date(Math.max(Date.now(), h.clock.now()) + 2 * 3600_000).toISOString(),
      },
      attempts: 1,
      waitSeconds: 1,
      between: async (h, job) => {
        h.clock.set(Math.max(h.clock.now(), Date.parse(job.runAt) + 1000));
        return h.aws.scheduler.fireDue();
      },
    }),
  },
  {
    id: 'retry-once',
    label: 'Fails once, then succeeds (flaky, 1 s backoff)',
    plan: () => ({ body: { type: 'flaky', payload: { failTimes: 1 } }, attempts: 2, waitSeconds: 3 }),
  },
];

/** Asks the API for routes the issue lists but the platform may not have yet. */
async function probe(h: Harness): Promise<PathResult[]> {
  const status = async (method: string, path: string, body?: unknown) =>
    (await asActor('probe', () => h.platform.api(functionUrlEvent(method, path, body)))).statusCode ?? 0;
  const missing = (code: number) => code === 404 || code === 405;
  const results: PathResult[] = [];
  const batch = await status('POST', '/jobs:batch', { jobs: [{ type: 'echo', payload: {} }] });
  results.push({
    id: 'batch-100',
    label: 'Batch enqueue of 100 (POST /jobs:batch)',
    ...(missing(batch)
      ? { status: 'not implemented yet', note: `POST /jobs:batch answers ${batch}` }
      : { status: 'exists, not measured', note: `POST /jobs:batch answers ${batch}; extend bench/paths.ts` }),
  });
  const cancelCodes = [
    await status('DELETE', '/jobs/bench-probe'),
    await status('POST', '/jobs/bench-probe/cancel', {}),
    await status('POST', '/jobs/bench-probe:cancel', {}),
  ];
  results.push({
    id: 'cancel',
    label: 'Cancel a scheduled job',
    ...(cancelCodes.every(missing)
      ? { status: 'not implemented yet', note: `no cancel route (answers ${cancelCodes.join('/')})` }
      : { status: 'exists, not measured', note: `a cancel route answers ${cancelCodes.join('/')}` }),
  });
  const cronCodes = [
    await status('POST', '/schedules', {}),
    await status('POST', '/crons', {}),
    await status('POST', '/cron', {}),
  ];
  results.push({
    id: 'cron-fire',
    label: 'Cron fire (recurring schedule)',
    ...(cronCodes.every(missing)
      ? { status: 'not implemented yet', note: `no cron route (answers ${cronCodes.join('/')})` }
      : { status: 'exists, not measured', note: `a cron route answers ${cronCodes.join('/')}` }),
  });
  return results;
}

/** Runs `jobsPerPath` jobs through each path; `aws` must have been started with `clock` and autoFire off. */
export async function measurePaths(aws: LocalAws, clock: ManualClock, jobsPerPath: number): Promise<PathResult[]> {
  aws.applyEnv();
  const recorder = new CallRecorder();
  const window: Harness['window'] = {};
  const platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('bench-paths'),
    jobs: [timed(echo as unknown as JobDefinition, window), timed(flaky as unknown as JobDefinition, window)],
    clients: countedClients(recorder),
    runWorkers: false,
    logger: createLogger({ level: 'error' }), // the retry path's expected warnings are noise here
  });
  const esm = countedEsmClient(recorder);
  const h: Harness = { aws, clock, platform, recorder, esm, window };
  try {
    const results: PathResult[] = [];
    for (const { id, label, plan } of PLANS) {
      await runJob(h, plan(-1, h)); // warm-up: connections, JIT; not counted
      const traces: JobTrace[] = [];
      for (let i = 0; i < jobsPerPath; i++) traces.push(await runJob(h, plan(i, h)));
      results.push({ id, label, status: 'measured', figures: analyse(traces) });
    }
    results.push(...(await probe(h)));
    return results;
  } finally {
    esm.destroy();
    await platform.stop();
  }
}
