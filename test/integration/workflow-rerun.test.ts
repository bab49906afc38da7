/**
 * Rerun from a step on local AWS (DynamoDB Local, the SQS emulator) through the real SDK, the API
 * over HTTP and the queue runners (docs/workflows.md "Rerun from a step"):
 *
 * - a 5-step job failed at step 4 and rerun from step 3 with a corrected payload: steps 1–2 are not
 *   run again (their recorded results are used), steps 3–5 run once each, with the new payload;
 * - a rerun racing a running attempt never overlaps it: refused (409) while the job runs; after a
 *   cancel, accepted at once, but its first step body starts only once the cancelled attempt's
 *   body has ended (its lease is the fence, as for a retry);
 * - the write units of the rerun path, as DynamoDB Local reports them.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { ControlService } from '../../shared/api/control-service';
import { createAwsClients } from '../../shared/aws/clients';
import { DynamoJobControl } from '../../shared/aws/dynamo-job-control';
import { DynamoJobStore } from '../../shared/aws/dynamo-job-store';
import { DynamoJournal } from '../../shared/aws/dynamo-journal';
import { systemClock } from '../../shared/core/clock';
import type { Job, JobView } from '../../shared/core/job';
import { defineJobType } from '../../shared/core/job-type';
import { journalScopeOf } from '../../shared/core/journal';
import { CostMeter } from '../../shared/lambda/cost-meter';
import { createLogger } from '../../shared/logger';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { FakeJobQueue, FakeJobScheduler, newJob } from '../support/fakes';
import { enqueueNew } from '../support/local-api';

let aws: LocalAws;
let platform: LocalPlatform;

/** Step bodies run, by `<job>:<step>:<payload version>`. */
const runs = new Map<string, number>();
const count = (key: string) => runs.set(key, (runs.get(key) ?? 0) + 1);

const fiveSpec = defineJobType({
  type: 'five-steps',
  payload: z.object({ order: z.string(), version: z.number(), divisor: z.number() }),
});
const fiveSteps: JobDefinition = {
  spec: fiveSpec,
  run: async (p, ctx) => {
    const { order, version, divisor } = p as { order: string; version: number; divisor: number };
    const step = (name: string, fn: () => unknown) =>
      ctx.step(name, () => {
        count(`${order}:${name}:v${version}`);
        return fn();
      });
    const one = await step('one', () => `one@v${version}`);
    const two = await step('two', () => `two@v${version}`);
    const three = await step('three', () => `three@v${version}`);
    const four = await step('four', () => {
      // the bug the corrected payload fixes: a divisor of 0
      if (divisor === 0) throw new Error('cannot divide by 0');
      return 100 / divisor;
    });
    const five = await step('five', () => `five@v${version}`);
    return { one, two, three, four, five };
  },
};

/** Each body of the `slow` step: when it ran, by which run of the job. */
const bodies: { run: number; start: number; end?: number }[] = [];
const slowSpec = defineJobType({ type: 'slow-step', payload: z.object({}) });
const slowStep: JobDefinition = {
  spec: slowSpec,
  run: async (_p, ctx) => {
    const result = await ctx.step('slow', async () => {
      const body: { run: number; start: number; end?: number } = { run: bodies.length + 1, start: Date.now() };
      bodies.push(body);
      if (body.run === 1) {
        // the first run works until its attempt is aborted (the cancel fails its next
        // heartbeat), then takes a while to stop: it honours ctx.signal, slowly
        await new Promise<void>((resolve) => {
          if (ctx.signal.aborted) resolve();
          ctx.signal.addEventListener('abort', () => resolve(), { once: true });
        });
        await new Promise((r) => setTimeout(r, 1_500));
      }
      body.end = Date.now();
      return { run: body.run };
    });
    return result;
  },
};

/** Children the `invoker` type started, by id: the payload each ran with. */
const children = new Map<string, unknown[]>();
const childSpec = defineJobType({ type: 'rerun-child', payload: z.object({ x: z.number() }) });
const child: JobDefinition = {
  spec: childSpec,
  run: async (p, ctx) => {
    children.set(ctx.jobId, [...(children.get(ctx.jobId) ?? []), p]);
    return { doubled: (p as { x: number }).x * 2 };
  },
};
const invokerSpec = defineJobType({ type: 'rerun-invoker', payload: z.object({ x: z.number(), ok: z.boolean() }) });
const invoker: JobDefinition = {
  spec: invokerSpec,
  run: async (p, ctx) => {
    const { x, ok } = p as { x: number; ok: boolean };
    const before = await ctx.step('before', () => `before@${x}`);
    const got = await ctx.invoke<{ doubled: number }>('double', 'rerun-child', { x });
    await ctx.step('check', () => {
      if (!ok) throw new Error('not ok');
      return true;
    });
    return { before, doubled: got.doubled };
  },
};

const LEASE_MS = 3_000;

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  aws.applyEnv();
  platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('rerun'),
    jobs: [fiveSteps, slowStep, child, invoker],
    leaseMs: LEASE_MS,
    logger: createLogger({ level: 'error' }),
  });
}, 120_000);
afterAll(async () => {
  await platform?.stop();
  await aws?.stop();
});

const view = (id: string) => fetch(`${platform.url}/jobs/${id}`).then((r) => r.json()) as Promise<JobView>;

async function until(id: string, done: (job: JobView) => boolean, ms = 30_000): Promise<JobView> {
  const deadline = Date.now() + ms;
  for (;;) {
    const job = await view(id);
    if (done(job)) return job;
    if (Date.now() > deadline) throw new Error(`job ${id} stayed ${JSON.stringify(job)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const post = (path: string, body?: unknown) =>
  fetch(`${platform.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> & JobView }));

describe('rerun from a step, on local AWS', () => {
  it('a 5-step job failed at step 4, rerun from step 3 with a corrected payload: steps 1–2 not run again, 3–5 once each', async () => {
    const id = `five-${Date.now()}`;
    await enqueueNew(platform.url, {
      id,
      type: 'five-steps',
      payload: { order: id, version: 1, divisor: 0 },
      maxAttempts: 1,
    });
    const failed = await until(id, (j) => j.state === 'failed');
    expect(failed.lastError?.message).toContain('cannot divide by 0');
    for (const name of ['one', 'two', 'three', 'four']) expect(runs.get(`${id}:${name}:v1`)).toBe(1);
    expect(runs.get(`${id}:five:v1`)).toBeUndefined();

    // refused, writing nothing: an unknown step, a payload the schema refuses
    const unknown = await post(`/jobs/${id}/rerun`, { fromStep: 'six' });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ error: { code: 'unknown_step', issues: [{ path: 'fromStep' }] } });
    const invalid = await post(`/jobs/${id}/rerun`, { fromStep: 'three', payload: { order: id, version: 2 } });
    expect(invalid.status).toBe(400);
    expect(invalid.body).toMatchObject({ error: { code: 'invalid_payload', issues: [{ path: 'payload.divisor' }] } });
    expect(await view(id)).toMatchObject({ state: 'failed', retries: 0, payload: { version: 1 } });

    const rerun = await post(`/jobs/${id}/rerun`, {
      fromStep: 'three',
      payload: { order: id, version: 2, divisor: 4 },
    });
    expect(rerun.status).toBe(200);
    expect(rerun.body).toMatchObject({
      id,
      state: 'queued',
      attempts: 0,
      reruns: 1,
      payload: { version: 2, divisor: 4 },
    });
    const done = await until(id, (j) => j.state === 'succeeded');
    // steps 1–2 are the recorded ones (of the first run, v1); 3–5 ran in the rerun (v2)
    expect(done.result).toEqual({ one: 'one@v1', two: 'two@v1', three: 'three@v2', four: 25, five: 'five@v2' });
    expect(done).toMatchObject({ attempts: 1, reruns: 1, createdAt: failed.createdAt });
    for (const name of ['one', 'two']) expect(runs.get(`${id}:${name}:v2`)).toBeUndefined();
    for (const name of ['three', 'four', 'five']) expect(runs.get(`${id}:${name}:v2`)).toBe(1);
    // and nothing of the first run ran again
    for (const name of ['one', 'two', 'three', 'four']) expect(runs.get(`${id}:${name}:v1`)).toBe(1);
    // a succeeded job may be rerun too, but not while it runs: the rerun above is over
    expect((await post(`/jobs/${id}/rerun`, { fromStep: 'five' })).status).toBe(200);
    const again = await until(id, (j) => j.state === 'succeeded' && j.reruns === 2);
    expect(again.result).toMatchObject({ four: 25, five: 'five@v2' });
    expect(runs.get(`${id}:five:v2`)).toBe(2);
    expect(runs.get(`${id}:four:v2`)).toBe(1);
  }, 90_000);

  it('a rerun racing a running attempt never overlaps it: 409 while it runs; after a cancel it waits for its lease', async () => {
    const id = `slow-${Date.now()}`;
    await enqueueNew(platform.url, { id, type: 'slow-step', payload: {}, maxAttempts: 1 });
    const deadline = Date.now() + 30_000;
    while (bodies.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(bodies).toHaveLength(1);

    // running: refused, and nothing written (same state, same attempt, no rerun)
    const refused = await post(`/jobs/${id}/rerun`, {});
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ error: { code: 'illegal_state' } });
    expect(await view(id)).toMatchObject({ state: 'running', attempts: 1, retries: 0 });

    // cancelled, its body still running: the rerun is taken at once
    expect((await post(`/jobs/${id}/cancel`)).status).toBe(200);
    const rerun = await post(`/jobs/${id}/rerun`, {});
    expect(rerun.status).toBe(200);
    expect(rerun.body).toMatchObject({ state: 'queued', reruns: 1 });
    expect(bodies[0]?.end).toBeUndefined();

    const done = await until(id, (j) => j.state === 'succeeded');
    expect(done.result).toEqual({ run: 2 });
    expect(bodies).toHaveLength(2);
    const [first, second] = bodies as [(typeof bodies)[0], (typeof bodies)[0]];
    // the rerun's body began only after the cancelled one had ended
    expect(first.end).toBeDefined();
    expect(second.start).toBeGreaterThanOrEqual(first.end as number);
  }, 90_000);
});

describe('a rerun that drops an invoke', () => {
  it('starts a new child (<id>.<name>.r1) with the corrected payload; the first child is not run again', async () => {
    const id = `inv-${Date.now()}`;
    await enqueueNew(platform.url, { id, type: 'rerun-invoker', payload: { x: 1, ok: false }, maxAttempts: 1 });
    await until(id, (j) => j.state === 'failed');
    expect(children.get(`${id}.double`)).toEqual([{ x: 1 }]);

    const rerun = await post(`/jobs/${id}/rerun`, { fromStep: 'double', payload: { x: 5, ok: true } });
    expect(rerun.status).toBe(200);
    const done = await until(id, (j) => j.state === 'succeeded');
    // the step before the invoke is the recorded one; the invoke started a child of its own
    expect(done.result).toEqual({ before: 'before@1', doubled: 10 });
    expect(children.get(`${id}.double.r1`)).toEqual([{ x: 5 }]);
    expect(children.get(`${id}.double`)).toEqual([{ x: 1 }]);
    expect(await view(`${id}.double.r1`)).toMatchObject({ state: 'succeeded', result: { doubled: 10 } });
  }, 60_000);
});

describe('write units of a rerun, as DynamoDB Local reports them', () => {
  it('1 per kept entry + 1 for the restart + 1 for its byDue entry, + 1 byTypeState for a failed job; 0 for what it drops', async () => {
    const meter = new CostMeter();
    const clients = createAwsClients({ cost: meter });
    const table = platform.config.tableName;
    const store = new DynamoJobStore(clients.dynamo, table);
    const journal = new DynamoJournal(clients.dynamo, table);
    const control = new ControlService({
      config: platform.config,
      catalog: [fiveSpec, slowSpec, childSpec, invokerSpec],
      store,
      control: new DynamoJobControl(clients.dynamo, table),
      // a queue of its own: the measured job is not run
      queue: new FakeJobQueue(),
      scheduler: new FakeJobScheduler(),
      clock: systemClock,
      log: createLogger({ level: 'error' }),
      journal,
    });
    const units = async (fn: () => Promise<unknown>) => (await meter.measure(fn)).cost.writeUnits;
    const now = Date.now();
    /** A finished job of `five-steps` with steps one..four recorded (1 WU each). */
    const seed = async (id: string, state: Job['state']) => {
      const job = newJob(
        {
          id,
          type: 'five-steps',
          state,
          payload: { order: id, version: 1, divisor: 0 },
          attempts: 1,
          maxAttempts: 1,
          finishedAt: new Date(now).toISOString(),
          expiresAt: Math.floor(now / 1000) + 86_400,
        },
        now - 10_000,
      );
      await store.create(job);
      for (const [i, name] of ['one', 'two', 'three', 'four'].entries()) {
        await journal.record({
          ...journalScopeOf(job),
          kind: 'step',
          name,
          value: `${name}@v1`,
          at: now - 5_000 + i,
          expiresAt: Math.floor(now / 1000) + 86_400,
        });
      }
      return job;
    };
    const tag = `wu${now}`;

    // a failed job (in byTypeState), from step three: 2 kept entries + the restart + byDue + byTypeState
    await seed(`${tag}-f`, 'failed');
    expect(await units(() => control.rerun(`${tag}-f`, { fromStep: 'three' }))).toBe(5);
    // a succeeded job with a corrected payload that fits the status item: no byTypeState entry
    await seed(`${tag}-s`, 'succeeded');
    expect(
      await units(() =>
        control.rerun(`${tag}-s`, { fromStep: 'three', payload: { order: `${tag}-s`, version: 2, divisor: 4 } }),
      ),
    ).toBe(4);
    // from the start: nothing copied
    await seed(`${tag}-z`, 'succeeded');
    expect(await units(() => control.rerun(`${tag}-z`, {}))).toBe(2);
    // refusals write nothing
    await seed(`${tag}-r`, 'failed');
    expect(await units(() => control.rerun(`${tag}-r`, { fromStep: 'nine' }).catch(() => undefined))).toBe(0);
  }, 60_000);
});
