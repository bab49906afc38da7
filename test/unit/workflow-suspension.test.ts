/**
 * A sleep or a signal wait that ends the attempt ends everything the handler runs: `ctx.signal`
 * aborts (its reason is the Suspension), and the worker waits for the handler, as after a
 * timeout, before the job is written `waiting` or its concurrency slot is given back. On the
 * in-memory ports; test/integration/workflow-suspension.test.ts runs the same on DynamoDB Local.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJobType } from '../../shared/core/job-type';
import type { JobContext } from '../../shared/runtime/job-definition';
import { sqsEvent } from '../support/fakes';
import { echoJob, harness, logged, messageFor } from './worker-harness';

/** `echo` with one slot per tenant, and a timeout long enough not to be what stops a handler. */
const perTenant = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number(), tenant: z.string() }),
  timeoutMs: 30_000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
  concurrency: [{ limit: 1, key: (p) => p.tenant }],
});
const job = (id: string, tenant = 't1') => echoJob(id, { payload: { n: 1, tenant }, flowKeys: [tenant] });

const NOT_STOPPED = 'the handler did not stop within a heartbeat interval of its abort signal; pass ctx.signal on';

/**
 * Work that honours its signal: it runs for `ms` unless aborted, and says when it started and
 * stopped, and why it stopped.
 */
function work(events: string[], ms: number) {
  const seen: { reason?: unknown; done?: Promise<void> } = {};
  const run = (signal: AbortSignal) => {
    seen.done = (async () => {
      events.push('work started');
      try {
        await sleep(ms, undefined, { signal });
      } catch {
        seen.reason = signal.reason;
      } finally {
        events.push('work stopped');
      }
    })();
    return seen.done;
  };
  return { seen, run };
}

/** The harness, with the suspend write and the slot's release logged into `events` as they happen. */
function watched(events: string[], run: (payload: unknown, ctx: JobContext) => Promise<unknown>, leaseMs?: number) {
  const h = harness({ spec: perTenant, run, ...(leaseMs ? { leaseMs } : {}) });
  const suspend = h.store.suspend.bind(h.store);
  h.store.suspend = async (input) => {
    events.push(`suspend ${input.job.id}`);
    return suspend(input);
  };
  h.flow.hook = (operation) => {
    if (operation === 'release') events.push('slot released');
  };
  return h;
}

describe('a wait that ends the attempt stops the work beside it first', () => {
  it('work beside a sleep is aborted, with the Suspension as reason, and has stopped before the job waits and its slot is given back', async () => {
    const events: string[] = [];
    const w = work(events, 1_000);
    const h = watched(events, async (_p, ctx) => {
      if (ctx.jobId === 'b') {
        events.push('b started');
        return 'b';
      }
      await Promise.all([ctx.sleep('nap', '2s'), w.run(ctx.signal)]);
      return 'a';
    });
    h.store.seed(job('a'));
    h.store.seed(job('b'));
    await h.worker(sqsEvent(messageFor('a')));
    expect(h.store.peek('a')).toMatchObject({ state: 'waiting', waitingFor: { kind: 'sleep', key: 'nap' } });
    // the next job of the key (limit 1) takes the slot only now
    await h.worker(sqsEvent(messageFor('b')));
    await w.seen.done;
    expect(events).toEqual([
      'work started',
      'work stopped',
      'suspend a',
      'slot released',
      'b started',
      'slot released',
    ]);
    expect(w.seen.reason).toMatchObject({ name: 'Suspension', wait: { kind: 'sleep', key: 'nap' } });
    expect(h.store.peek('b')).toMatchObject({ state: 'succeeded' });
  });

  it('so is work beside a signal wait', async () => {
    const events: string[] = [];
    const w = work(events, 1_000);
    const h = watched(events, async (_p, ctx) => {
      const [got] = await Promise.all([ctx.waitForSignal('paid', { timeout: '1h' }), w.run(ctx.signal)]);
      return { got };
    });
    h.store.seed(job('c'));
    await h.worker(sqsEvent(messageFor('c')));
    await w.seen.done;
    expect(h.store.peek('c')).toMatchObject({ state: 'waiting', waitSignal: 'paid' });
    expect(events).toEqual(['work started', 'work stopped', 'suspend c', 'slot released']);
    expect(w.seen.reason).toMatchObject({ name: 'Suspension', wait: { kind: 'signal', key: 'paid' } });
  });

  it('a handler that waits for work ignoring the abort is waited for one heartbeat interval, logged, and the job still waits', async () => {
    const events: string[] = [];
    let stopped: Promise<unknown> | undefined;
    const h = watched(
      events,
      async (_p, ctx) => {
        // the handler waits for both; the work does not look at ctx.signal
        stopped = Promise.allSettled([
          ctx.sleep('nap', '2s'),
          (async () => {
            events.push('work started');
            await sleep(1_500);
            events.push('work stopped');
          })(),
        ]);
        await stopped;
        return 'after';
      },
      600, // a heartbeat every 200 ms
    );
    h.store.seed(job('d'));
    const started = Date.now();
    await h.worker(sqsEvent(messageFor('d')));
    const took = Date.now() - started;
    // not held until the work ends: one heartbeat interval, then the warning
    expect(took).toBeLessThan(1_200);
    expect(logged(h.logs, NOT_STOPPED)).toEqual([
      expect.objectContaining({ level: 'warn', jobId: 'd', reason: 'Suspension', waitedMs: 200 }),
    ]);
    expect(events).toEqual(['work started', 'suspend d', 'slot released']);
    expect(h.store.peek('d')).toMatchObject({ state: 'waiting', waitingFor: { kind: 'sleep', key: 'nap' } });
    expect(h.store.peek('d')?.result).toBeUndefined();
    await stopped;
  });

  it('as is one that catches the Suspension and goes on', async () => {
    const events: string[] = [];
    let rest: Promise<void> | undefined;
    const h = watched(
      events,
      async (_p, ctx) => {
        try {
          await ctx.sleep('nap', '1h');
        } catch {
          rest = sleep(1_500).then(() => {
            events.push('handler went on');
          });
          await rest;
        }
        return 'swallowed';
      },
      600,
    );
    h.store.seed(job('e'));
    await h.worker(sqsEvent(messageFor('e')));
    expect(logged(h.logs, NOT_STOPPED)).toEqual([expect.objectContaining({ reason: 'Suspension' })]);
    expect(events).toEqual(['suspend e', 'slot released']);
    expect(h.store.peek('e')).toMatchObject({ state: 'waiting' });
    expect(h.store.peek('e')?.result).toBeUndefined();
    await rest;
  });
});
