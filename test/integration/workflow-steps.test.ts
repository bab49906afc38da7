/**
 * Durable steps, a sleep and a signal wait on local AWS (DynamoDB Local, the SQS emulator)
 * through the real SDK and the API: the job waits in state `waiting` with no attempt spent, a
 * signal resumes it, recorded steps never run again, and bad signals are refused.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import type { JobView } from '../../shared/core/job';
import { defineJobType } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { enqueueNew } from '../support/local-api';

let aws: LocalAws;
beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
});
afterAll(async () => {
  await aws?.stop();
});

const view = (platform: LocalPlatform, id: string) =>
  fetch(`${platform.url}/jobs/${id}`).then((r) => r.json()) as Promise<JobView>;

async function until(platform: LocalPlatform, id: string, done: (job: JobView) => boolean, ms = 30_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const job = await view(platform, id);
    if (done(job)) return job;
    if (Date.now() > deadline) throw new Error(`job ${id} stayed ${JSON.stringify(job)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const signal = (platform: LocalPlatform, id: string, name: string, body: unknown) =>
  fetch(`${platform.url}/jobs/${id}/signals/${name}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));

describe('workflow steps on local AWS', () => {
  it('sleeps, waits for its signal in state waiting, resumes on it, and runs each step body once', async () => {
    const runs: Record<string, number> = {};
    const count = (name: string) => {
      runs[name] = (runs[name] ?? 0) + 1;
    };
    const order: JobDefinition = {
      spec: defineJobType({
        type: 'order',
        payload: z.object({ order: z.string() }),
        signals: { payment: z.object({ amount: z.number() }) },
      }),
      run: async (p, ctx) => {
        const { order: id } = p as { order: string };
        const reserved = await ctx.step('reserve', () => {
          count(`${id}:reserve`);
          return { reserved: id };
        });
        await ctx.sleep('settle', 1500);
        const payment = await ctx.waitForSignal<{ amount: number }>('payment', { timeout: '1h' });
        const shipped = await ctx.step('ship', () => {
          count(`${id}:ship`);
          return { shipped: true };
        });
        return { ...reserved, payment, ...shipped };
      },
    };
    aws.applyEnv();
    const platform = await startLocalPlatform({
      aws,
      prefix: uniquePrefix('workflow'),
      jobs: [order],
      logger: createLogger({ level: 'error' }),
    });
    try {
      // A: the signal comes after the job waits for it
      await enqueueNew(platform.url, { id: 'order-a', type: 'order', payload: { order: 'a' } });
      const sleeping = await until(platform, 'order-a', (j) => j.state === 'waiting');
      expect(sleeping).toMatchObject({ attempts: 0, waitingFor: { kind: 'sleep', key: 'settle' } });
      const waiting = await until(platform, 'order-a', (j) => j.waitingFor?.kind === 'signal');
      expect(waiting).toMatchObject({ state: 'waiting', attempts: 0, waitingFor: { key: 'payment' } });

      // refused: a payload that does not match, a signal the type does not declare, a missing job
      expect(await signal(platform, 'order-a', 'payment', { payload: { amount: 'ten' } })).toMatchObject({
        status: 400,
        body: { error: { code: 'invalid_payload', issues: [expect.objectContaining({ path: 'payload.amount' })] } },
      });
      expect(await signal(platform, 'order-a', 'refund', { payload: {} })).toMatchObject({
        status: 400,
        body: { error: { code: 'unknown_signal' } },
      });
      expect((await signal(platform, 'no-such-order', 'payment', { payload: { amount: 1 } })).status).toBe(404);
      expect((await view(platform, 'order-a')).state).toBe('waiting');

      const sent = await signal(platform, 'order-a', 'payment', { payload: { amount: 10 } });
      expect(sent).toMatchObject({
        status: 202,
        body: { jobId: 'order-a', signal: 'payment', resumed: true, duplicate: false },
      });
      const done = await until(platform, 'order-a', (j) => j.state === 'succeeded');
      expect(done).toMatchObject({ attempts: 1, result: { reserved: 'a', payment: { amount: 10 }, shipped: true } });
      expect(runs).toMatchObject({ 'a:reserve': 1, 'a:ship': 1 });

      // a replay of the same send is 200 and changes nothing; another payload is refused; so is a finished job's
      expect(await signal(platform, 'order-a', 'payment', { payload: { amount: 10 } })).toMatchObject({
        status: 409,
        body: { error: { code: 'job_finished' } },
      });

      // B: the signal comes before the job waits (during its sleep): the inbox keeps it
      await enqueueNew(platform.url, { id: 'order-b', type: 'order', payload: { order: 'b' } });
      await until(platform, 'order-b', (j) => j.waitingFor?.kind === 'sleep');
      const early = await signal(platform, 'order-b', 'payment', { payload: { amount: 3 } });
      expect(early).toMatchObject({ status: 202, body: { resumed: false } });
      expect(await signal(platform, 'order-b', 'payment', { payload: { amount: 3 } })).toMatchObject({
        status: 200,
        body: { duplicate: true },
      });
      expect(await signal(platform, 'order-b', 'payment', { payload: { amount: 4 } })).toMatchObject({
        status: 409,
        body: { error: { code: 'signal_exists' } },
      });
      const b = await until(platform, 'order-b', (j) => j.state === 'succeeded');
      expect(b.result).toMatchObject({ payment: { amount: 3 } });
      expect(runs).toMatchObject({ 'b:reserve': 1, 'b:ship': 1 });
    } finally {
      await platform.stop();
    }
  }, 90_000);
});
