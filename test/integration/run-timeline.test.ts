/**
 * `GET /jobs/{id}/timeline` on local AWS (DynamoDB Local, the SQS emulator) through the API over
 * HTTP and the queue runners: a workflow's attempts (a failed one, then the one that succeeded)
 * and its journal's entries in the order they were recorded (steps with their size and preview,
 * a sleep, a signal wait woken by its signal, one woken by its timeout, an invoke and its child);
 * its pages; a rerun's series; 404 and 400; and that reading it writes nothing.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { echo } from '../../functions/jobs/echo';
import type { TimelinePage } from '../../shared/api/timeline-service';
import { createClient } from '../../shared/client/index';
import type { JobView } from '../../shared/core/job';
import { defineJobType } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';

let aws: LocalAws;
let platform: LocalPlatform;

/** Ids whose `charge` step throws (once: the id is taken out when it does). */
const failOnce = new Set<string>();

const runSpec = defineJobType({
  type: 'timeline-run',
  payload: z.object({ n: z.number() }),
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 500 } },
});
const runJob: JobDefinition = {
  spec: runSpec,
  run: async (p, ctx) => {
    const { n } = p as { n: number };
    const order = await ctx.step('load', () => ({ order: `o-${n}`, lines: Array.from({ length: 40 }, (_, i) => i) }));
    await ctx.step('charge', () => {
      if (failOnce.delete(ctx.jobId)) throw new Error('card declined');
      return { charged: n * 2 };
    });
    await ctx.sleep('cool-down', 1_500);
    const approval = await ctx.waitForSignal<{ by: string }>('approve', { timeout: '5m' });
    const late = await ctx.waitForSignal('never', { timeout: 1_200 });
    const echoed = await ctx.invoke<unknown>('echo-it', 'echo', { n });
    await ctx.step('ship', () => ({ shipped: order.order, by: approval?.by, late, echoed: echoed !== undefined }));
    return { ok: true };
  },
};

const manySpec = defineJobType({ type: 'timeline-many', payload: z.object({}) });
const manySteps: JobDefinition = {
  spec: manySpec,
  run: async (_p, ctx) => {
    for (let i = 0; i < 130; i++) await ctx.step(`s${String(i).padStart(3, '0')}`, () => i);
    return { done: true };
  },
};

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('timeline'),
    jobs: [runJob, manySteps, echo],
    logger: createLogger({ level: 'error' }),
  });
}, 120_000);

afterAll(async () => {
  await platform?.stop();
  await aws?.stop();
});

/** An API answer as the test reads it. */
interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: the test reads the API's answers field by field
  json: any;
}

async function call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Answer> {
  const response = await fetch(`${platform.url}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: response.status, json: await response.json() };
}

async function until(id: string, done: (job: JobView) => boolean, ms = 40_000): Promise<JobView> {
  const deadline = Date.now() + ms;
  for (;;) {
    const job = (await call('GET', `/jobs/${id}`)).json as JobView;
    if (done(job)) return job;
    if (Date.now() > deadline) throw new Error(`job ${id} stayed ${JSON.stringify(job)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('a job’s timeline', () => {
  it('shows each attempt and, in order, its steps, sleep, waits and invoke; reading it writes nothing', async () => {
    const id = uniquePrefix('run');
    failOnce.add(id);
    expect((await call('POST', '/jobs', { id, type: 'timeline-run', payload: { n: 21 } })).status).toBe(201);
    await until(id, (job) => job.state === 'waiting' && job.waitingFor?.key === 'approve');
    // while it waits: the failed attempt, then the current one; the sleep has woken, the wait waits
    const waiting = (await call('GET', `/jobs/${id}/timeline`)).json as TimelinePage;
    expect(waiting.attempts.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'failed'],
      [2, 'waiting'],
    ]);
    expect(waiting.attempts[0]?.error).toEqual({ reason: 'error', name: 'Error', message: 'card declined' });
    expect(waiting.entries.map((e) => `${e.kind}:${e.name}`)).toEqual([
      'step:load',
      'step:charge',
      'sleep:cool-down',
      'wait:approve',
    ]);
    const wait = waiting.entries[3];
    expect(wait).toMatchObject({ kind: 'wait', wokenBy: null, endedAt: null, event: false, preview: null });

    expect((await call('POST', `/jobs/${id}/signals/approve`, { payload: { by: 'ops' } })).status).toBe(202);
    const done = await until(id, (job) => job.state === 'succeeded');

    const before = (await call('GET', `/jobs/${id}`)).json as JobView;
    const client = createClient({ url: platform.url });
    const timeline = await client.timeline(id);
    // reading writes nothing: the job item is as it was
    expect((await call('GET', `/jobs/${id}`)).json).toEqual(before);
    expect(timeline).toMatchObject({ id, type: 'timeline-run', state: 'succeeded', series: null, nextCursor: null });
    expect(timeline.attempts.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'failed'],
      [2, 'succeeded'],
    ]);
    expect(timeline.attempts[1]?.endedAt).toBe(done.finishedAt);
    expect(timeline.entries.map((e) => `${e.kind}:${e.name}`)).toEqual([
      'step:load',
      'step:charge',
      'sleep:cool-down',
      'wait:approve',
      'wait:never',
      'invoke:echo-it',
      'step:ship',
    ]);
    const [load, charge, sleep, approve, never, invoke, ship] = timeline.entries;
    // `load` was recorded by the first attempt, which failed at `charge`; the rest by the second
    expect([load, charge, sleep, approve, never, invoke, ship].map((e) => e?.attempt)).toEqual([0, 1, 1, 1, 1, 1, 1]);
    if (load?.kind !== 'step' || charge?.kind !== 'step' || ship?.kind !== 'step') throw new Error('not steps');
    const loadJson = JSON.stringify({ order: 'o-21', lines: Array.from({ length: 40 }, (_, i) => i) });
    expect(load.bytes).toBe(Buffer.byteLength(loadJson));
    expect(load.preview).toBe(`${loadJson.slice(0, 120)}…`);
    expect(charge.preview).toBe('{"charged":42}');
    // a step's start is the end of what came before it in its attempt, or the attempt's start: the
    // first step of each attempt here has neither (the job item keeps the start of its last claim only)
    expect([load.startedAt, load.durationMs, charge.startedAt, charge.durationMs]).toEqual([null, null, null, null]);
    expect(sleep).toMatchObject({ kind: 'sleep', woke: true });
    if (sleep?.kind !== 'sleep') throw new Error('not a sleep');
    // the wake time is taken just before it is recorded
    expect(Date.parse(sleep.until) - Date.parse(sleep.at)).toBeGreaterThan(1_400);
    expect(Date.parse(sleep.until) - Date.parse(sleep.at)).toBeLessThanOrEqual(1_500);
    expect(approve).toMatchObject({ kind: 'wait', wokenBy: 'signal', event: false, preview: '{"by":"ops"}' });
    if (approve?.kind !== 'wait') throw new Error('not a wait');
    expect(Date.parse(approve.until as string) - Date.parse(approve.at)).toBeGreaterThan(5 * 60_000 - 100);
    expect(Date.parse(approve.until as string) - Date.parse(approve.at)).toBeLessThanOrEqual(5 * 60_000);
    expect(Date.parse(approve.endedAt as string)).toBeGreaterThanOrEqual(Date.parse(approve.at));
    expect(never).toMatchObject({ kind: 'wait', wokenBy: 'timeout', preview: null });
    expect(invoke).toMatchObject({
      kind: 'invoke',
      child: { id: `${id}.echo-it`, type: 'echo', state: 'succeeded' },
      outcome: 'succeeded',
    });
    // the step after an invoke starts when the invoke ended, not when it began
    expect(ship.durationMs).toBe(Date.parse(ship.at) - Date.parse(ship.startedAt as string));
    expect(Date.parse(ship.startedAt as string)).toBe(Date.parse((invoke as { endedAt: string }).endedAt));
  }, 90_000);

  it('pages a long journal (100 entries a page) and shows a rerun’s series', async () => {
    const id = uniquePrefix('many');
    expect((await call('POST', '/jobs', { id, type: 'timeline-many', payload: {} })).status).toBe(201);
    await until(id, (job) => job.state === 'succeeded');
    const first = (await call('GET', `/jobs/${id}/timeline`)).json as TimelinePage;
    expect(first.entries).toHaveLength(100);
    expect(first.nextCursor).toBe('100');
    const second = (await call('GET', `/jobs/${id}/timeline?cursor=100`)).json as TimelinePage;
    expect(second.entries.map((e) => e.name)).toEqual(Array.from({ length: 30 }, (_, i) => `s${100 + i}`));
    expect(second.nextCursor).toBeNull();
    expect((await createClient({ url: platform.url }).timeline(id)).entries).toHaveLength(130);

    // a rerun from s120: the new series holds the entries before it, then those it ran again
    const rerun = await call('POST', `/jobs/${id}/rerun`, { fromStep: 's120' });
    expect(rerun.status).toBe(200);
    await until(id, (job) => job.state === 'succeeded');
    const after = await createClient({ url: platform.url }).timeline(id);
    expect(after.series).toMatch(/^r1\./);
    expect(after.entries.map((e) => e.name)).toEqual(
      Array.from({ length: 130 }, (_, i) => `s${String(i).padStart(3, '0')}`),
    );
    expect(after.attempts.map((a) => [a.attempt, a.outcome])).toEqual([[1, 'succeeded']]);
  }, 90_000);

  it('is a 404 for an unknown job, a 400 for a bad cursor', async () => {
    expect((await call('GET', `/jobs/${uniquePrefix('none')}/timeline`)).json).toMatchObject({
      error: { code: 'job_not_found' },
    });
    expect((await call('GET', `/jobs/${uniquePrefix('none')}/timeline`)).status).toBe(404);
    const id = uniquePrefix('echo');
    expect((await call('POST', '/jobs', { id, type: 'echo', payload: {} })).status).toBe(201);
    await until(id, (job) => job.state === 'succeeded');
    const bad = await call('GET', `/jobs/${id}/timeline?cursor=abc`);
    expect(bad.status).toBe(400);
    expect(bad.json.error.issues).toEqual([{ path: 'cursor', message: 'must be a cursor a page gave' }]);
    // a plain job: its one attempt, no entry
    const plain = (await call('GET', `/jobs/${id}/timeline`)).json as TimelinePage;
    expect(plain.attempts.map((a) => a.outcome)).toEqual(['succeeded']);
    expect(plain.entries).toEqual([]);
  });
});
