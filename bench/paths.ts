/**
 * AWS requests per job, by path, from the real code: the API handler (as the Function URL calls
 * it), the Scheduler stand-in, the worker (as the event source mapping calls it) and the
 * supervisor, with every SDK client counted. One trace runs at a time, so each call belongs to
 * exactly one trace.
 */
import { performance } from 'node:perf_hooks';
import { ChangeMessageVisibilityCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { echo } from '../functions/jobs/echo';
import { flaky } from '../functions/jobs/flaky';
import type { JobStore } from '../shared/core/ports';
import { createLogger } from '../shared/logger';
import type { JobDefinition } from '../shared/runtime/job-definition';
import { type LocalAws, localClients, runOnce, uniquePrefix } from '../test/local-aws/index';
import { startLocalPlatform } from '../test/local-aws/local-platform';
import { asActor, CallRecorder, countedClients, countedEsmClient, currentActor } from './counting-middleware';
import {
  awaiting,
  debounced,
  emitter,
  fair,
  invoker,
  limited,
  lined,
  notified,
  paced,
  pacedRanked,
  ranked,
  rated,
  signaled,
  single,
  sink,
  sleeper,
  stacky,
  stepper,
} from './fixtures';
import type { Harness } from './harness';
import type { OffsetClock } from './local';
import { analyse, type Invocation, type JobTrace, type PathFigures } from './path-analysis';
import { NotImplemented, type PathPlan, PLANS } from './path-plans';
import { combine, type StatusItemFigures, StatusItemProbe } from './status-item';

export type { Harness } from './harness';

export interface PathResult {
  id: string;
  label: string;
  status: 'measured' | 'not implemented yet';
  note?: string;
  figures?: PathFigures;
  /** The job's status item (paths with `statusItem`). */
  statusItem?: StatusItemFigures;
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

/** The store, with every created job noted (a Proxy, so new store methods pass through untouched). */
function noteCreates(store: JobStore, created: Harness['created']): JobStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'create') {
        return async (job: Parameters<JobStore['create']>[0]) => {
          const out = await target.create(job);
          if (out.created) created.push({ id: job.id, actor: currentActor() });
          return out;
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Reads a job without counting it. */
const stateOf = (h: Harness, id: string) => asActor('harness', () => h.platform.store.get(id));

/**
 * Starts one trace, then delivers messages to the worker the way the event source mapping would
 * until every job of the trace is in `until`: a failed attempt comes back after its (real-time)
 * backoff; a delivery the worker hid until `runAt` comes back once the clock got there.
 */
async function runTrace(
  h: Harness,
  plan: PathPlan,
  i: number,
): Promise<{ trace: JobTrace; statusItem?: StatusItemFigures | undefined }> {
  const mark = h.recorder.mark();
  const createdMark = h.created.length;
  const started = await plan.start(h, i);
  const probe = plan.statusItem ? new StatusItemProbe(h.harness.dynamo) : undefined;
  const ours = () => h.recorder.since(mark).filter((c) => c.actor === 'api' || c.actor === 'worker');
  await probe?.probe(ours());
  const pending = new Set(started.ids);
  const until = plan.until ?? 'succeeded';
  const invocations: Invocation[] = [];
  /** Calls a hand-on made as the worker before the job's first invocation. */
  const handedOnEarly: Invocation['calls'] = [];
  const esm: JobTrace['esm'] = [];
  for (let polls = 0; ; polls++) {
    if (plan.discover) {
      for (const c of h.created.slice(createdMark)) if (c.actor === 'worker') pending.add(c.id);
    }
    for (const id of pending) if ((await stateOf(h, id))?.state === until) pending.delete(id);
    const discovered = !plan.discover || h.created.slice(createdMark).some((c) => c.actor === 'worker');
    if (pending.size === 0 && discovered) break;
    if (polls > 30 + started.jobs)
      throw new Error(`${plan.id}: jobs ${[...pending].join(', ')} never reached ${until}`);
    if (plan.during) {
      const jobs = await Promise.all([...pending].map((id) => stateOf(h, id)));
      const duringMark = h.recorder.mark();
      started.apiInvocations += await plan.during(h, jobs);
      // what it made as the worker (a hand-on another job's worker makes) counts with the last
      // invocation: its requests and write units, but no Lambda invocation of its own
      // (a job that waited from its enqueue has had no invocation yet: its next one carries them)
      const handOn = h.recorder.since(duringMark).filter((c) => c.actor === 'worker');
      const last = invocations.at(-1);
      if (last) last.calls.push(...handOn);
      else handedOnEarly.push(...handOn);
    }
    // each queue of the trace's types in turn (a job and the jobs it starts on other types)
    for (const type of plan.types ?? [plan.type ?? 'echo']) {
      const q = h.platform.deployment.queues[type];
      const handler = h.platform.workers[type];
      if (!q || !handler) throw new Error(`no queue or worker for ${type}`);
      const before = h.recorder.mark();
      let ms = 0;
      let handles: string[] = [];
      h.window.current = undefined;
      const result = await runOnce({
        queueUrl: q.url,
        queueArn: q.arn,
        functionName: `bench-${type}`,
        batchSize: plan.batchSize ?? 1,
        waitTimeSeconds: plan.waitSeconds,
        sqs: h.esm,
        handler: async (event: SQSEvent) => {
          handles = event.Records.map((r) => r.receiptHandle);
          const t0 = performance.now();
          try {
            return await asActor('worker', () => handler(event));
          } finally {
            ms = performance.now() - t0;
          }
        },
      });
      const calls = h.recorder.since(before);
      esm.push(...calls.filter((c) => c.actor === 'esm' && !(c.operation === 'ReceiveMessage' && c.messages === 0)));
      if (result.messageIds.length === 0) continue;
      const invocation: Invocation = {
        calls: [...handedOnEarly.splice(0), ...calls.filter((c) => c.actor === 'worker')],
        records: handles.length,
        ms,
      };
      if (h.window.current) invocation.handler = h.window.current;
      invocations.push(invocation);
      await probe?.probe(ours());
      // A job the worker hid until its runAt (a far-future job, one that sleeps): let the
      // platform's time get there, and SQS's too.
      const early = await Promise.all([...pending].map((id) => stateOf(h, id)));
      const runAt = Math.max(
        0,
        ...early
          .filter((j) => j?.state === 'scheduled' || (j?.state === 'waiting' && j.waitSignal === undefined))
          .map((j) => Date.parse(j?.runAt ?? '')),
      );
      if (runAt > h.clock.now()) {
        h.clock.advanceTo(runAt + 10);
        for (const handle of handles) {
          await h.harness.sqs.send(
            new ChangeMessageVisibilityCommand({ QueueUrl: q.url, ReceiptHandle: handle, VisibilityTimeout: 0 }),
          );
        }
      }
    }
  }
  const { jobs, apiInvocations, apiMs, schedulerInvocations } = started;
  // the API's calls: the start's, and those the plan made while the jobs ran (`during`)
  const api = h.recorder.since(mark).filter((c) => c.actor === 'api');
  const trace: JobTrace = {
    jobs,
    apiInvocations,
    apiMs,
    schedulerInvocations,
    api,
    invocations,
    esm,
    supervisor: [],
    supervisorInvocations: 0,
  };
  return { trace, statusItem: probe?.finish(ours()) };
}

/** One idle supervisor pass a minute after the previous one (what the EventBridge rule runs every minute). */
async function supervisorPass(h: Harness): Promise<PathResult> {
  await asActor('setup', () => h.platform.supervise()); // catches up with the minutes the clock jumped
  h.clock.advanceTo(h.clock.now() + 60_000);
  const mark = h.recorder.mark();
  await asActor('supervisor', () => h.platform.supervise());
  const calls = h.recorder.since(mark).filter((c) => c.actor === 'supervisor');
  const trace: JobTrace = {
    jobs: 1,
    api: [],
    apiInvocations: 0,
    apiMs: 0,
    invocations: [],
    esm: [],
    supervisor: calls,
    supervisorInvocations: 1,
    schedulerInvocations: 0,
  };
  return {
    id: 'supervisor-pass',
    label: 'Supervisor pass, idle (runs every minute), per pass',
    status: 'measured',
    figures: analyse([trace]),
  };
}

/**
 * Runs each path `jobsPerPath` times (a batch path once), after one uncounted warm-up trace. `aws` must have been started with
 * `clock` and autoFire off; the platform runs on the same clock, so a fired schedule finds its
 * job due.
 */
export async function measurePaths(
  aws: LocalAws,
  clock: OffsetClock,
  jobsPerPath: number,
  warmUp = true,
): Promise<PathResult[]> {
  aws.applyEnv();
  const recorder = new CallRecorder();
  const window: Harness['window'] = {};
  const created: Harness['created'] = [];
  const platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('bench-paths'),
    jobs: [
      echo,
      flaky,
      sink,
      stacky,
      limited,
      lined,
      ranked,
      fair,
      single,
      paced,
      pacedRanked,
      rated,
      debounced,
      stepper,
      sleeper,
      signaled,
      notified,
      emitter,
      awaiting,
      invoker,
    ].map((def) => timed(def as unknown as JobDefinition, window)),
    clients: countedClients(recorder),
    clock,
    runWorkers: false,
    wrapStore: (store) => noteCreates(store, created),
    logger: createLogger({ level: 'error' }), // the retry path's expected warnings are noise here
  });
  const h: Harness = {
    aws,
    clock,
    harness: localClients(aws),
    platform,
    recorder,
    esm: countedEsmClient(recorder),
    window,
    created,
  };
  try {
    const results: PathResult[] = [];
    for (const plan of PLANS) {
      try {
        await plan.setup?.(h);
        if (warmUp) await runTrace(h, plan, -1); // connections, JIT: timings only, counts are the same
        const traces: JobTrace[] = [];
        const statusItems: StatusItemFigures[] = [];
        for (let i = 0; i < (plan.traces ?? jobsPerPath); i++) {
          const { trace, statusItem } = await runTrace(h, plan, i);
          traces.push(trace);
          if (statusItem) statusItems.push(statusItem);
        }
        const statusItem = combine(statusItems);
        results.push({
          id: plan.id,
          label: plan.label,
          status: 'measured',
          figures: analyse(traces),
          ...(statusItem ? { statusItem } : {}),
        });
      } catch (error) {
        if (!(error instanceof NotImplemented)) throw error;
        results.push({ id: plan.id, label: plan.label, status: 'not implemented yet', note: error.message });
      }
    }
    results.push(await supervisorPass(h));
    return results;
  } finally {
    h.esm.destroy();
    h.harness.destroy();
    await platform.stop();
  }
}
