/**
 * A stored signal always wakes its job (issue 24, item 4), on DynamoDB Local, the local SQS and
 * the Scheduler stand-in, through the API: when the wake after a signal's inbox write is lost
 * (the wake write failed, or the API died after it and before the message's send) and no client
 * sends the signal again, the supervisor resumes the job within its bound (10 minutes after the
 * signal, plus a pass), not at the wait's deadline (366 days by default). The same cases on the
 * in-memory fakes: test/unit/signal-wake.test.ts.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { defineJobType } from '../../shared/core/job-type';
import type { JobStore } from '../../shared/core/ports';
import { createLogger } from '../../shared/logger';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { ShiftedClock } from '../support/scheduling-clock';

const MIN = 60_000;
/** The supervisor's bound for a signal whose wake was lost: its look, 10 minutes on, and a pass. */
const BOUND_MS = 11 * MIN;

const waiter: JobDefinition = {
  spec: defineJobType({ type: 'waiter', payload: z.object({}) }),
  run: async (_p, ctx) => ({ got: await ctx.waitForSignal('paid') }),
};

/** How the API's wake goes wrong in a test. */
type WakeFault = 'none' | 'write fails' | 'dies after the write';

let aws: LocalAws;
let platform: LocalPlatform;
const clock = new ShiftedClock();
let fault: WakeFault = 'none';

/** The platform's job store, whose `wake` fails as `fault` says (the API's and the workers' alike). */
function faultyWake(store: JobStore): JobStore {
  return new Proxy(store, {
    get(target, name, receiver) {
      if (name !== 'wake') return Reflect.get(target, name, receiver);
      return async (input: Parameters<JobStore['wake']>[0]) => {
        if (fault === 'write fails') throw new Error('InternalServerError: the wake write failed');
        const woken = await target.wake(input);
        if (fault === 'dies after the write') throw new Error('the API was killed after its wake write');
        return woken;
      };
    },
  });
}

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint'), clock });
  aws.applyEnv();
  platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('sigwake'),
    jobs: [waiter],
    clock,
    wrapStore: faultyWake,
    logger: createLogger({ level: process.env.ORRERY_TEST_LOG === '1' ? 'debug' : 'silent' }),
    runner: { waitTimeSeconds: 1 },
  });
});
afterAll(async () => {
  await platform?.stop();
  await aws?.stop();
});

const post = (path: string, body: unknown) =>
  fetch(`${platform.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));

async function until(id: string, done: (state: string | undefined) => boolean, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const job = await platform.store.get(id);
    if (done(job?.state)) return job;
    if (Date.now() > deadline) throw new Error(`job ${id} stayed ${JSON.stringify(job)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A job that waits for `paid`, past the creation sweep (which gives it a due entry at its deadline). */
async function waiting(id: string) {
  expect((await post('/jobs', { id, type: 'waiter', payload: {} })).status).toBe(201);
  const job = await until(id, (state) => state === 'waiting');
  expect(job).toMatchObject({ waitSignal: 'paid' });
  clock.advance(30 * MIN);
  await platform.supervise();
}

describe('a stored signal whose wake is lost still resumes its job within the supervisor’s bound', () => {
  it.each([
    ['the wake write fails', 'write fails'],
    ['the API dies after the wake write, before the send', 'dies after the write'],
  ] as const)('%s: the supervisor resumes the job with its signal', async (_label, kind) => {
    const id = `sw-${kind.replaceAll(' ', '-')}-${Date.now()}`;
    await waiting(id);
    fault = kind;
    try {
      expect((await post(`/jobs/${id}/signals/paid`, { payload: { amount: 42 } })).status).toBeGreaterThanOrEqual(500);
    } finally {
      fault = 'none';
    }
    // nothing brings the job back by itself: its message waits for the deadline (a year away)
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await platform.store.get(id)).toMatchObject({ state: 'waiting' });

    const signalledAt = clock.now();
    clock.advance(BOUND_MS);
    await platform.supervise();
    const done = await until(id, (state) => state === 'succeeded');
    expect(done).toMatchObject({ result: { got: { amount: 42 } } });
    expect(Date.parse(done?.finishedAt ?? '')).toBeLessThan(signalledAt + BOUND_MS + MIN);
  });

  it('a healthy signal resumes the job at once; the supervisor’s later look sends nothing', async () => {
    const id = `sw-healthy-${Date.now()}`;
    await waiting(id);
    expect(await post(`/jobs/${id}/signals/paid`, { payload: 1 })).toMatchObject({
      status: 202,
      body: { resumed: true },
    });
    await until(id, (state) => state === 'succeeded');
    clock.advance(BOUND_MS);
    expect((await platform.supervise()).resent).toEqual([]);
  });
});
