/**
 * Durable steps, sleeps and signal waits in the worker (shared/runtime/workflow.ts), on the
 * in-memory ports: what runs again on a later attempt, what the job looks like while it waits,
 * and when it resumes.
 */
import { describe, expect, it } from 'vitest';
import { MAX_VISIBILITY_DELAY_MS } from '../../shared/core/backoff';
import { type Job, toView } from '../../shared/core/job';
import { MAX_CLOCK_SKEW_MS } from '../../shared/core/lease';
import type { JobStore } from '../../shared/core/ports';
import { wakeScheduleName } from '../../shared/core/ports';
import { incarnationOf } from '../../shared/core/table';
import type { JobContext } from '../../shared/runtime/job-definition';
import { createWorker } from '../../shared/runtime/worker';
import { sqsEvent, testConfig } from '../support/fakes';
import { echoJob, echoSpec, harness, messageFor, redelivery, T0 } from './worker-harness';

const iso = (ms: number) => new Date(ms).toISOString();
const HOUR = 3_600_000;
/** The incarnation of a job the tests seed (created at T0). */
const INC0 = incarnationOf(iso(T0));

/** A store whose every call after `freeze()` never settles: a worker process that was killed. */
function freezable(store: JobStore) {
  let frozen = false;
  const proxy = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) =>
        frozen ? new Promise(() => {}) : (value as (...a: unknown[]) => unknown).apply(target, args);
    },
  });
  return { store: proxy, freeze: () => (frozen = true) };
}

/** Counts each step body's runs. */
function counter() {
  const runs: Record<string, number> = {};
  const body = (name: string, value: unknown) => () => {
    runs[name] = (runs[name] ?? 0) + 1;
    return value;
  };
  return { runs, body };
}

describe('ctx.step', () => {
  it('a 3-step job killed after step 2 runs only step 3 on its next attempt', async () => {
    const { runs, body } = counter();
    let kill: (() => void) | undefined;
    const run = async (_p: unknown, ctx: JobContext) => {
      const a = (await ctx.step('one', body('one', 1))) as number;
      const b = (await ctx.step('two', body('two', 2))) as number;
      if (kill) {
        kill(); // the process dies here: nothing after this point happens in this attempt
        await new Promise(() => {});
      }
      const c = (await ctx.step('three', body('three', 3))) as number;
      return a + b + c;
    };
    const h = harness({ run });
    h.store.seed(echoJob('wf-1'));
    // the first attempt: a worker on the same ports whose store calls hang once it is killed
    const first = freezable(h.store);
    const killed = new Promise<void>((resolve) => {
      kill = () => {
        first.freeze();
        resolve();
      };
    });
    const dead = createWorker(
      { spec: echoSpec, run },
      { config: testConfig(['echo']), store: first.store, queue: h.queue, journal: h.journal, clock: h.clock },
    );
    void dead(redelivery('wf-1'));
    await killed;
    kill = undefined;
    expect(runs).toEqual({ one: 1, two: 1 });
    expect(h.store.peek('wf-1')).toMatchObject({ state: 'running', attempts: 1 });

    // its lease runs out; the message comes back and another worker takes the job over
    h.clock.set(h.store.peek('wf-1')?.leaseExpiresAt ?? 0);
    h.clock.advance(MAX_CLOCK_SKEW_MS + 1);
    await h.worker(redelivery('wf-1'));

    expect(runs).toEqual({ one: 1, two: 1, three: 1 });
    expect(h.store.peek('wf-1')).toMatchObject({ state: 'succeeded', attempts: 2, result: 6 });
    expect(h.journal.count('wf-1', 'step')).toBe(3);
  });

  it('a step that throws follows the retry policy; the next attempt re-runs only that step and the ones after', async () => {
    const { runs, body } = counter();
    let failTwo = true;
    const h = harness({
      run: async (_p, ctx) => {
        await ctx.step('one', body('one', 'a'));
        await ctx.step('two', () => {
          runs.two = (runs.two ?? 0) + 1;
          if (failTwo) throw new Error('card declined');
          return 'b';
        });
        return await ctx.step('three', body('three', 'c'));
      },
    });
    h.store.seed(echoJob('wf-2'));
    await h.worker(redelivery('wf-2'));
    expect(h.store.peek('wf-2')).toMatchObject({
      state: 'retrying',
      attempts: 1,
      lastError: { message: 'card declined' },
    });
    failTwo = false;
    h.clock.advance(2000);
    await h.worker(redelivery('wf-2'));
    expect(runs).toEqual({ one: 1, two: 2, three: 1 });
    expect(h.store.peek('wf-2')).toMatchObject({ state: 'succeeded', attempts: 2, result: 'c' });
  });

  it('gives a step the JSON of its result on the first run too, as later runs get it', async () => {
    const seen: unknown[] = [];
    const h = harness({
      run: async (_p, ctx) => {
        seen.push(await ctx.step('when', () => ({ at: new Date(T0), skip: undefined, n: 1 })));
        throw new Error('again');
      },
    });
    h.store.seed(echoJob('wf-json'));
    await h.worker(redelivery('wf-json'));
    h.clock.advance(2000);
    await h.worker(redelivery('wf-json'));
    expect(seen).toEqual([
      { at: iso(T0), n: 1 },
      { at: iso(T0), n: 1 },
    ]);
  });

  it('reads nothing on the job’s first run, and its whole journal once (one load) on a later one', async () => {
    let fail = true;
    const h = harness({
      run: async (_p, ctx) => {
        await ctx.step('one', () => 1);
        await ctx.step('two', () => 2);
        if (fail) throw new Error('later');
        return 'done';
      },
    });
    h.store.seed(echoJob('wf-3'));
    await h.worker(redelivery('wf-3'));
    expect(h.journal.calls.map((c) => c.method)).toEqual(['record', 'record']);
    fail = false;
    h.clock.advance(2000);
    await h.worker(redelivery('wf-3'));
    expect(h.journal.calls.map((c) => c.method)).toEqual(['record', 'record', 'load']);
  });

  it('fails the job at once, recording nothing, for a result over 64 KiB or a name used twice in a run', async () => {
    const h = harness({
      run: async (payload, ctx) => {
        if ((payload as { n: number }).n === 1) return await ctx.step('big', () => 'x'.repeat(70_000));
        await ctx.step('same', () => 1);
        return await ctx.step('same', () => 2);
      },
    });
    h.store.seed(echoJob('wf-big', { payload: { n: 1 } }));
    h.store.seed(echoJob('wf-twice', { payload: { n: 2 } }));
    await h.worker(sqsEvent(messageFor('wf-big'), messageFor('wf-twice')));
    expect(h.store.peek('wf-big')).toMatchObject({
      state: 'failed',
      attempts: 1,
      lastError: { name: 'StepUsageError', message: expect.stringContaining('the limit is 65536') },
    });
    expect(h.journal.count('wf-big', 'step')).toBe(0);
    expect(h.store.peek('wf-twice')).toMatchObject({
      state: 'failed',
      lastError: { name: 'StepUsageError', message: expect.stringContaining('used twice') },
    });
  });

  it('runs a job of 10,000 steps, and a later run replays them all without running one', async () => {
    let bodies = 0;
    let fail = true;
    const h = harness({
      run: async (_p, ctx) => {
        let sum = 0;
        for (let i = 0; i < 10_000; i++)
          sum += await ctx.step(`s-${i}`, () => {
            bodies += 1;
            return i;
          });
        if (fail) throw new Error('after the steps');
        return sum;
      },
    });
    h.store.seed(echoJob('wf-10k'));
    await h.worker(redelivery('wf-10k'));
    expect(bodies).toBe(10_000);
    expect(h.journal.count('wf-10k', 'step')).toBe(10_000);
    fail = false;
    h.clock.advance(2000);
    await h.worker(redelivery('wf-10k'));
    expect(bodies).toBe(10_000);
    expect(h.store.peek('wf-10k')).toMatchObject({ state: 'succeeded', result: (9_999 * 10_000) / 2 });
  });
});

describe('ctx.sleep', () => {
  it('a 2 h sleep ends the attempt: waiting, no attempt spent, message back in 2 h; it resumes after the sleep only', async () => {
    const { runs, body } = counter();
    const h = harness({
      run: async (_p, ctx) => {
        await ctx.step('before', body('before', 1));
        await ctx.sleep('nap', '2h');
        return await ctx.step('after', body('after', 2));
      },
    });
    h.store.seed(echoJob('sl-1'));
    const response = await h.worker(redelivery('sl-1'));
    expect(response.batchItemFailures).toHaveLength(1);
    expect(h.store.peek('sl-1')).toMatchObject({
      state: 'waiting',
      attempts: 0,
      resumes: 1,
      runAt: iso(T0 + 2 * HOUR),
      waitingFor: { kind: 'sleep', key: 'nap', until: iso(T0 + 2 * HOUR), since: iso(T0) },
    });
    expect(h.store.peek('sl-1')?.leaseOwner).toBeUndefined();
    expect(h.queue.visibility.at(-1)?.seconds).toBe(7200);
    expect(runs).toEqual({ before: 1 });
    expect(h.metrics.sum('JobsSuspended')).toBe(1);

    // a message back early does not start it
    h.clock.advance(HOUR);
    await h.worker(redelivery('sl-1'));
    expect(h.store.peek('sl-1')).toMatchObject({ state: 'waiting', attempts: 0 });
    expect(runs).toEqual({ before: 1 });

    h.clock.advance(HOUR);
    await h.worker(redelivery('sl-1'));
    expect(runs).toEqual({ before: 1, after: 1 });
    expect(h.store.peek('sl-1')).toMatchObject({ state: 'succeeded', attempts: 1, result: 2 });
    expect(toView(h.store.peek('sl-1') as Job)).toMatchObject({ state: 'succeeded', resumes: 1 });
  });

  it('keeps the wake time of its first call: a run after a crash sleeps until the same moment', async () => {
    const h = harness({ run: async (_p, ctx) => ctx.sleep('nap', 10 * 60_000) });
    h.store.seed(echoJob('sl-2', { state: 'running', attempts: 1, leaseToken: 1, leaseExpiresAt: T0 - 10_000 }));
    await h.journal.record({
      jobId: 'sl-2',
      incarnation: INC0,
      kind: 'sleep',
      name: 'nap',
      value: T0 + 60_000,
      at: T0 - 60_000,
      expiresAt: 0,
    });
    await h.worker(redelivery('sl-2'));
    expect(h.store.peek('sl-2')).toMatchObject({ state: 'waiting', runAt: iso(T0 + 60_000) });
  });

  it('a sleep longer than a message can be hidden goes through a one-time schedule', async () => {
    const h = harness({
      withScheduler: true,
      run: async (_p, ctx) => ctx.sleep('long', new Date(T0 + 3 * 86_400_000)),
    });
    h.store.seed(echoJob('sl-3'));
    expect((await h.worker(redelivery('sl-3'))).batchItemFailures).toEqual([]);
    expect(h.scheduler.schedules.get(wakeScheduleName('sl-3', 1))).toMatchObject({ fireAt: T0 + 3 * 86_400_000 });
    expect(3 * 86_400_000).toBeGreaterThan(MAX_VISIBILITY_DELAY_MS);
  });

  it('the job waits even if the handler catches the suspension and returns', async () => {
    const h = harness({
      run: async (_p, ctx) => {
        try {
          await ctx.sleep('nap', '1h');
        } catch {
          return 'swallowed';
        }
        return 'after';
      },
    });
    h.store.seed(echoJob('sl-4'));
    await h.worker(redelivery('sl-4'));
    expect(h.store.peek('sl-4')).toMatchObject({ state: 'waiting', runAt: iso(T0 + HOUR) });
    expect(h.store.peek('sl-4')?.result).toBeUndefined();
  });

  it('fails the job for a sleep past 366 days or a bad duration', async () => {
    const h = harness({
      run: async (payload, ctx) =>
        (payload as { n: number }).n === 1 ? ctx.sleep('far', '400d') : ctx.sleep('bad', 'soon'),
    });
    h.store.seed(echoJob('sl-far', { payload: { n: 1 } }));
    h.store.seed(echoJob('sl-bad', { payload: { n: 2 } }));
    await h.worker(sqsEvent(messageFor('sl-far'), messageFor('sl-bad')));
    expect(h.store.peek('sl-far')).toMatchObject({ state: 'failed', lastError: { name: 'StepUsageError' } });
    expect(h.store.peek('sl-bad')).toMatchObject({ state: 'failed', lastError: { name: 'StepUsageError' } });
  });
});

describe('ctx.waitForSignal', () => {
  const waiter =
    (options: Parameters<JobContext['waitForSignal']>[1] = { timeout: '1d' }) =>
    async (_p: unknown, ctx: JobContext) => ({ got: await ctx.waitForSignal('paid', options) });

  it('a signal sent before the wait is in the inbox: the wait returns it at once', async () => {
    const h = harness({ run: waiter() });
    h.store.seed(echoJob('sg-1'));
    await h.journal.deliver({
      jobId: 'sg-1',
      incarnation: INC0,
      name: 'paid',
      signal: { payload: { amount: 5 }, payloadHash: 'h', at: iso(T0) },
      expiresAt: 0,
    });
    await h.worker(redelivery('sg-1'));
    expect(h.store.peek('sg-1')).toMatchObject({ state: 'succeeded', result: { got: { amount: 5 } } });
  });

  it('a signal sent after the wait makes the waiting job due at once; it resumes with the payload', async () => {
    const h = harness({ run: waiter() });
    h.store.seed(echoJob('sg-2'));
    await h.worker(redelivery('sg-2'));
    expect(h.store.peek('sg-2')).toMatchObject({
      state: 'waiting',
      waitSignal: 'paid',
      runAt: iso(T0 + 86_400_000),
      waitingFor: { kind: 'signal', key: 'paid', until: iso(T0 + 86_400_000) },
    });
    h.clock.advance(60_000);
    // what POST /jobs/{id}/signals/{name} does: into the inbox, then wake the job
    await h.journal.deliver({
      jobId: 'sg-2',
      incarnation: INC0,
      name: 'paid',
      signal: { payload: 7, payloadHash: 'h', at: iso(T0) },
      expiresAt: 0,
    });
    expect(await h.store.wake({ id: 'sg-2', signal: 'paid', now: h.clock.now() })).toMatchObject({
      runAt: iso(T0 + 60_000),
    });
    await h.worker(redelivery('sg-2'));
    expect(h.store.peek('sg-2')).toMatchObject({ state: 'succeeded', attempts: 1, result: { got: 7 } });
  });

  it('a signal that arrives while the handler runs, after it looked, is not lost: the worker wakes the job itself', async () => {
    const h = harness({ run: waiter() });
    // the sender's put lands just after the handler looked at the inbox, and its wake finds the
    // job still running (refused)
    const look = h.journal.signal.bind(h.journal);
    let woke: unknown = 'not tried';
    h.journal.signal = async (input) => {
      const seen = await look(input);
      h.journal.signal = look;
      const signal = { payload: 'late', payloadHash: 'h', at: iso(T0) };
      await h.journal.deliver({ jobId: 'sg-3', incarnation: INC0, name: 'paid', signal, expiresAt: 0 });
      woke = await h.store.wake({ id: 'sg-3', signal: 'paid', now: h.clock.now() });
      return seen;
    };
    h.store.seed(echoJob('sg-3'));
    await h.worker(redelivery('sg-3'));
    expect(woke).toBeUndefined();
    // due now, and its message comes back at once
    expect(h.store.peek('sg-3')).toMatchObject({ state: 'waiting', runAt: iso(T0) });
    expect(h.queue.visibility.at(-1)?.seconds).toBe(0);
    await h.worker(redelivery('sg-3'));
    expect(h.store.peek('sg-3')).toMatchObject({ state: 'succeeded', result: { got: 'late' } });
  });

  it('returns null once its timeout passed; with onTimeout "throw" the job fails', async () => {
    for (const [id, onTimeout] of [
      ['sg-4', 'null'],
      ['sg-5', 'throw'],
    ] as const) {
      const h = harness({ run: waiter({ timeout: '2h', onTimeout }) });
      h.store.seed(echoJob(id));
      await h.worker(redelivery(id));
      expect(h.store.peek(id)).toMatchObject({ state: 'waiting', runAt: iso(T0 + 2 * HOUR) });
      h.clock.advance(2 * HOUR);
      await h.worker(redelivery(id));
      if (onTimeout === 'null') expect(h.store.peek(id)).toMatchObject({ state: 'succeeded', result: { got: null } });
      else
        expect(h.store.peek(id)).toMatchObject({
          state: 'failed',
          lastError: { name: 'SignalTimeoutError', message: `no signal "paid" arrived before ${iso(T0 + 2 * HOUR)}` },
        });
      // a signal after the timeout changes nothing: the outcome was recorded
      await h.journal.deliver({
        jobId: id,
        incarnation: INC0,
        name: 'paid',
        signal: { payload: 1, payloadHash: 'h', at: iso(T0) },
        expiresAt: 0,
      });
      expect(await h.store.wake({ id, signal: 'paid', now: h.clock.now() })).toBeUndefined();
    }
  });
});
