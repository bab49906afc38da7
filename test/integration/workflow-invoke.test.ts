/**
 * `ctx.invoke` on local AWS (DynamoDB Local and the local SQS) through the real SDK and the
 * adapters, run by the queue runners: a parent gets its child's result; a Promise.all of 3
 * invokes resumes once; a failed child throws InvokedJobFailedError in the parent; a replay
 * starts no second child; a fan-out resumes the parent once, after the last child. And the write
 * units an invoke adds beyond a plain child job, as DynamoDB Local reports them.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { createAwsClients } from '../../shared/aws/clients';
import { DynamoJobGraph } from '../../shared/aws/dynamo-job-graph';
import { DynamoJobStore } from '../../shared/aws/dynamo-job-store';
import { DynamoJournal } from '../../shared/aws/dynamo-journal';
import { SqsJobQueue } from '../../shared/aws/sqs-job-queue';
import { invokedChildId } from '../../shared/core/invoke';
import { defineJobType } from '../../shared/core/job-type';
import { METRIC } from '../../shared/core/metrics';
import type { JobStore } from '../../shared/core/ports';
import { incarnationOf } from '../../shared/core/table';
import { startInvoked } from '../../shared/dispatch/invoke';
import { releaseDepsOf } from '../../shared/dispatch/release';
import { InvokedJobFailedError, PermanentError } from '../../shared/errors';
import { CostMeter } from '../../shared/lambda/cost-meter';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { MemoryMetrics, newJob } from '../support/fakes';

/** Children of the fan-out: 1,000 (about 40 s on DynamoDB Local); `ORRERY_INVOKE_FAN_OUT` sets another size. */
const FAN_OUT = Number(process.env.ORRERY_INVOKE_FAN_OUT ?? 1000);

let aws: LocalAws;
let platform: LocalPlatform;
/** Each delivery's requests and write units, by job type (the workers' cost metrics). */
const metrics = new MemoryMetrics();
/** Each run of a parent: its id, and what it returned or threw. */
const parentRuns: { id: string; start: number; outcome?: unknown; error?: string }[] = [];
/** The job ids the store's `create` was called with, in order (a start, or a replay's refused one). */
const creates: string[] = [];
/** Each run of a child: its id and when it ended. */
const childRuns: { id: string; end: number }[] = [];

const parentSpec = defineJobType({
  type: 'invoker',
  payload: z.object({ children: z.number(), failAt: z.number().optional(), sequential: z.boolean().optional() }),
  timeoutMs: 60_000,
  retry: { maxAttempts: 1, backoff: { kind: 'constant', delayMs: 1000 } },
});
const childSpec = defineJobType({
  type: 'invokee',
  payload: z.object({ n: z.number(), fail: z.boolean().optional() }),
  timeoutMs: 10_000,
  retry: { maxAttempts: 1, backoff: { kind: 'constant', delayMs: 1000 } },
});

const invoker: JobDefinition = {
  spec: parentSpec,
  run: async (input, ctx) => {
    const payload = input as z.output<typeof parentSpec.payload>;
    const run: (typeof parentRuns)[number] = { id: ctx.jobId, start: Date.now() };
    parentRuns.push(run);
    try {
      if (payload.sequential) {
        // one invoke after the other: each run replays the invokes before it from the journal
        const results: { doubled: number }[] = [];
        for (let n = 0; n < payload.children; n++) results.push(await ctx.invoke(`c${n}`, 'invokee', { n }));
        run.outcome = { sum: results.reduce((a, r) => a + r.doubled, 0), count: results.length };
        return run.outcome;
      }
      const results = await Promise.all(
        Array.from({ length: payload.children }, (_, n) =>
          ctx.invoke<{ doubled: number }>(`c${n}`, 'invokee', {
            n,
            ...(n === payload.failAt ? { fail: true } : {}),
          }),
        ),
      );
      run.outcome = { sum: results.reduce((a, r) => a + r.doubled, 0), count: results.length };
      return run.outcome;
    } catch (error) {
      if (error instanceof InvokedJobFailedError) {
        run.error = error.message;
        return { caught: error.childState };
      }
      throw error;
    }
  },
};
const invokee: JobDefinition = {
  spec: childSpec,
  run: async (input, ctx) => {
    const payload = input as z.output<typeof childSpec.payload>;
    await new Promise((r) => setTimeout(r, 5));
    childRuns.push({ id: ctx.jobId, end: Date.now() });
    if (payload.fail) throw new PermanentError(`child ${payload.n} fails`);
    return { doubled: payload.n * 2 };
  },
};

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('invoke'),
    jobs: [invoker, invokee],
    meter: new CostMeter(),
    metrics,
    wrapStore: (store: JobStore): JobStore =>
      new Proxy(store, {
        get(target, key, receiver) {
          const value = Reflect.get(target, key, receiver);
          if (key !== 'create' || typeof value !== 'function') return value;
          return (job: Parameters<JobStore['create']>[0]) => {
            creates.push(job.id);
            return value.call(target, job);
          };
        },
      }),
    runner: { batchSize: 10, maxConcurrency: 4, waitTimeSeconds: 1 },
  });
}, 120_000);

afterAll(async () => {
  await platform?.stop();
  await aws?.stop();
});

async function post(path: string, body: unknown): Promise<number> {
  const response = await fetch(`${platform.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  await response.text();
  return response.status;
}

async function finished(id: string, ms: number) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const job = await platform.store.get(id);
    if (job && ['succeeded', 'failed', 'cancelled'].includes(job.state)) return job;
    await new Promise((r) => setTimeout(r, 250));
  }
  return await platform.store.get(id);
}

const runsOf = (id: string) => parentRuns.filter((r) => r.id === id);

describe('ctx.invoke on local AWS', () => {
  it('a parent invokes one child and returns its result', async () => {
    const id = `inv1-${Date.now()}`;
    expect(await post('/jobs', { type: 'invoker', id, payload: { children: 1 } })).toBe(201);
    const parent = await finished(id, 60_000);
    expect(parent).toMatchObject({ state: 'succeeded', result: { sum: 0, count: 1 }, resumes: 1, attempts: 1 });
    expect((await platform.store.get(invokedChildId(id, 'c0')))?.state).toBe('succeeded');
    expect(runsOf(id)).toHaveLength(2);
  }, 90_000);

  it('a Promise.all of 3 invokes suspends once and resumes once, after the last child', async () => {
    const id = `inv3-${Date.now()}`;
    expect(await post('/jobs', { type: 'invoker', id, payload: { children: 3 } })).toBe(201);
    const parent = await finished(id, 60_000);
    expect(parent).toMatchObject({ state: 'succeeded', result: { sum: 6, count: 3 }, resumes: 1 });
    const runs = runsOf(id);
    expect(runs).toHaveLength(2);
    const children = [0, 1, 2].map((n) => invokedChildId(id, `c${n}`));
    const lastEnd = Math.max(...childRuns.filter((r) => children.includes(r.id)).map((r) => r.end));
    expect(runs[1]?.start).toBeGreaterThanOrEqual(lastEnd);
  }, 90_000);

  it('a failed child throws InvokedJobFailedError in the parent, recorded in its journal', async () => {
    const id = `invf-${Date.now()}`;
    expect(await post('/jobs', { type: 'invoker', id, payload: { children: 2, failAt: 1 } })).toBe(201);
    const parent = await finished(id, 60_000);
    expect(parent).toMatchObject({ state: 'succeeded', result: { caught: 'failed' } });
    expect(runsOf(id)[1]?.error).toContain(`invoked job ${id}.c1 ("c1") ended failed: PermanentError: child 1 fails`);
    const journal = new DynamoJournal(platform.clients.dynamo, platform.config.tableName);
    const entries = await journal.load({ jobId: id, incarnation: incarnationOf(parent?.createdAt ?? '') });
    expect(entries.get('invoked#c1')?.value).toMatchObject({ state: 'failed', error: { name: 'PermanentError' } });
  }, 90_000);

  it('replays start no second child: sequential invokes replay the earlier ones from the journal', async () => {
    const id = `invr-${Date.now()}`;
    expect(await post('/jobs', { type: 'invoker', id, payload: { children: 3, sequential: true } })).toBe(201);
    const parent = await finished(id, 60_000);
    expect(parent).toMatchObject({ state: 'succeeded', result: { sum: 6, count: 3 }, resumes: 3 });
    // four runs: each of the first three starts one child and waits; the fourth returns
    expect(runsOf(id)).toHaveLength(4);
    for (const n of [0, 1, 2]) {
      const child = invokedChildId(id, `c${n}`);
      expect(creates.filter((c) => c === child)).toHaveLength(1);
      expect(childRuns.filter((r) => r.id === child)).toHaveLength(1);
    }
  }, 90_000);

  it(`a fan-out of ${FAN_OUT} children resumes the parent once, after the last`, async () => {
    const id = `invn-${Date.now()}`;
    const deliveriesBefore = metrics.values(METRIC.writeUnits, 'invokee').length;
    expect(await post('/jobs', { type: 'invoker', id, payload: { children: FAN_OUT } })).toBe(201);
    const parent = await finished(id, 240_000);
    expect(parent).toMatchObject({
      state: 'succeeded',
      result: { sum: FAN_OUT * (FAN_OUT - 1), count: FAN_OUT },
      resumes: 1,
    });
    expect(runsOf(id)).toHaveLength(2);
    expect(new Set(childRuns.filter((r) => r.id.startsWith(`${id}.`)).map((r) => r.id)).size).toBe(FAN_OUT);
    // Each child's delivery: its claim and success (2, as any job), the release write on the
    // parent and its own `childrenReleased` (1 + 1 while the parent's item is under 1 KB; the
    // release grows with the parent's `rel` map, see docs/workflows.md "Invoke").
    const units = metrics.values(METRIC.writeUnits, 'invokee').slice(deliveriesBefore);
    expect(units.length).toBeGreaterThanOrEqual(FAN_OUT);
    expect(Math.min(...units)).toBe(4);
    const mean = units.reduce((a, b) => a + b, 0) / units.length;
    console.info(
      `fan-out of ${FAN_OUT}: child deliveries' write units mean ${mean.toFixed(2)}, max ${Math.max(...units)}`,
    );
  }, 300_000);
});

describe('write units of an invoke beyond a plain child job, as DynamoDB Local reports them', () => {
  it('start: 1 for the registry item (the child itself costs what a job costs); replay: 1 (the refused create)', async () => {
    const meter = new CostMeter();
    const clients = createAwsClients({ cost: meter });
    const table = platform.config.tableName;
    const store = new DynamoJobStore(clients.dynamo, table);
    const graph = new DynamoJobGraph(clients.dynamo, table);
    const units = async (fn: () => Promise<unknown>) => (await meter.measure(fn)).cost.writeUnits;
    const tag = `wu${Date.now()}`;
    const now = Date.now();
    const parent = newJob({ id: `${tag}-p`, type: 'invoker', state: 'running' }, now);
    await store.create(parent);
    const deps = {
      ...releaseDepsOf({ config: platform.config, graph, queue: new SqsJobQueue(clients.sqs) }),
      store,
    };
    const child = { id: `${tag}-p.c0`, type: 'invokee', payload: { n: 1 }, index: 0 };
    const plain = await units(() =>
      store.create(newJob({ id: `${tag}-plain`, type: 'invokee', payload: { n: 1 } }, now)),
    );
    const start = await units(() => startInvoked(deps, parent, child, now));
    expect(start - plain).toBe(1);
    // a replay's start: the refused create (1), and the registry put refused as a conditional write (1)
    const replay = await units(() => startInvoked(deps, parent, child, now + 1));
    expect(replay).toBeLessThanOrEqual(2);
  }, 30_000);

  it('the wait and the resume: journal entries 1 + 1, the wait 1, the release 1 + the wake 1, the child’s record 1', async () => {
    const meter = new CostMeter();
    const clients = createAwsClients({ cost: meter });
    const table = platform.config.tableName;
    const store = new DynamoJobStore(clients.dynamo, table);
    const graph = new DynamoJobGraph(clients.dynamo, table);
    const journal = new DynamoJournal(clients.dynamo, table);
    const units = async (fn: () => Promise<unknown>) => (await meter.measure(fn)).cost.writeUnits;
    const tag = `wv${Date.now()}`;
    const now = Date.now();
    const parent = newJob({ id: `${tag}-p`, type: 'invoker', state: 'queued' }, now);
    await store.create(parent);
    const claim = await store.claim({ id: parent.id, type: parent.type, owner: 'w', now, leaseMs: 30_000 });
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    const scope = { jobId: parent.id, incarnation: incarnationOf(parent.createdAt) };
    const entry = (kind: 'invoke' | 'invoked', value: unknown) =>
      journal.record({ ...scope, kind, name: 'c0', value, at: now, expiresAt: Math.floor(now / 1000) + 86_400 });
    expect(await units(() => entry('invoke', { id: `${tag}-p.c0`, index: 0 }))).toBe(1);
    const wait = {
      kind: 'invoke' as const,
      key: 'c0',
      until: new Date(now + 86_400_000).toISOString(),
      since: new Date(now).toISOString(),
      children: 1,
    };
    expect(
      await units(() =>
        store.suspend({ job: claim.job, now, runAt: now, waitingFor: wait, writer: 'w', pendingParents: 1 }),
      ),
    ).toBe(1);
    const child = newJob({ id: `${tag}-p.c0`, type: 'invokee', state: 'succeeded', childCount: 1 }, now);
    await store.create(child);
    const release = await meter.measure(() =>
      graph.release({
        child: parent.id,
        index: 0,
        outcome: { kind: 'resolve' },
        parent: child.id,
        parentState: 'succeeded',
        now: now + 1,
        expiresAt: Math.floor(now / 1000) + 86_400,
        incarnation: incarnationOf(parent.createdAt),
      }),
    );
    expect(release.value.kind).toBe('ready');
    expect(release.cost.writeUnits).toBe(2); // the count, then the wake
    expect(await units(() => graph.markReleased({ parent: child.id, count: 1 }))).toBe(1);
    expect(await units(() => entry('invoked', { state: 'succeeded', result: { doubled: 2 } }))).toBe(1);
  }, 30_000);
});
