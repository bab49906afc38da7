/**
 * On DynamoDB Local: a sleep or a signal wait that ends the attempt aborts `ctx.signal`, and the
 * work beside it has stopped before the job is written `waiting` and before its concurrency slot
 * (limit 1) is given back, so the next job of its key never runs beside it. A handler that does
 * not stop is waited for one heartbeat interval and logged. (test/unit/workflow-suspension.test.ts
 * holds the same on the in-memory ports.)
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJobType } from '../../shared/core/job-type';
import type { JobContext } from '../../shared/runtime/job-definition';
import { useJobTable } from '../local-aws/job-table';
import { dynamoWorker } from './workflow-worker-harness';

const { dynamo, tableName } = useJobTable('suspension');

const spec = defineJobType({
  type: 'tenant-work',
  payload: z.object({ tenant: z.string() }),
  timeoutMs: 30_000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
  concurrency: [{ limit: 1, key: (p) => p.tenant }],
});

const NOT_STOPPED = 'the handler did not stop within a heartbeat interval of its abort signal; pass ctx.signal on';

/** The worker, with the suspend write and the slot's release logged into `events` as they are made. */
function watched(events: string[], run: (payload: unknown, ctx: JobContext) => Promise<unknown>, leaseMs?: number) {
  const h = dynamoWorker({ dynamo, tableName, spec, run, ...(leaseMs ? { leaseMs } : {}) });
  const suspend = h.store.suspend.bind(h.store);
  h.store.suspend = async (input) => {
    events.push(`suspend ${input.job.id}`);
    return suspend(input);
  };
  const release = h.flow.release.bind(h.flow);
  h.flow.release = async (input) => {
    events.push(`slot released by ${input.jobId}`);
    return release(input);
  };
  return h;
}

describe('a wait that ends the attempt stops the work beside it first, on DynamoDB Local', () => {
  it('work beside a sleep is aborted and has stopped before the job waits and the next job of its key starts', async () => {
    const events: string[] = [];
    let reason: unknown;
    let done: Promise<void> | undefined;
    const h = watched(events, async (_p, ctx) => {
      if (ctx.jobId === 'sus-b') {
        events.push('sus-b started');
        return 'b';
      }
      done = (async () => {
        events.push('work started');
        try {
          await sleep(3_000, undefined, { signal: ctx.signal });
        } catch {
          reason = ctx.signal.reason;
        } finally {
          events.push('work stopped');
        }
      })();
      await Promise.all([ctx.sleep('nap', '2s'), done]);
      return 'a';
    });
    await h.create('sus-a', { payload: { tenant: 'x' }, flowKeys: ['x'] });
    await h.create('sus-b', { payload: { tenant: 'x' }, flowKeys: ['x'] });
    await h.deliver('sus-a');
    expect(await h.store.get('sus-a')).toMatchObject({ state: 'waiting', waitingFor: { kind: 'sleep', key: 'nap' } });
    await h.deliver('sus-b');
    await done;
    expect(events).toEqual([
      'work started',
      'work stopped',
      'suspend sus-a',
      'slot released by sus-a',
      'sus-b started',
      'slot released by sus-b',
    ]);
    expect(reason).toMatchObject({ name: 'Suspension', wait: { kind: 'sleep', key: 'nap' } });
    expect(await h.store.get('sus-b')).toMatchObject({ state: 'succeeded' });
  });

  it('a handler that waits for work ignoring the abort is waited for one heartbeat interval and logged; the job waits', async () => {
    const events: string[] = [];
    let all: Promise<unknown> | undefined;
    const h = watched(
      events,
      async (_p, ctx) => {
        all = Promise.allSettled([
          ctx.waitForSignal('paid', { timeout: '1h' }),
          (async () => {
            events.push('work started');
            await sleep(2_500);
            events.push('work stopped');
          })(),
        ]);
        await all;
        return 'after';
      },
      1_500, // a heartbeat every 500 ms
    );
    await h.create('sus-c', { payload: { tenant: 'y' }, flowKeys: ['y'] });
    const started = Date.now();
    await h.deliver('sus-c');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(h.logs.filter((l) => l.message === NOT_STOPPED)).toEqual([
      expect.objectContaining({ level: 'warn', jobId: 'sus-c', reason: 'Suspension', waitedMs: 500 }),
    ]);
    expect(events).toEqual(['work started', 'suspend sus-c', 'slot released by sus-c']);
    expect(await h.store.get('sus-c')).toMatchObject({ state: 'waiting', waitSignal: 'paid' });
    await all;
  });
});
