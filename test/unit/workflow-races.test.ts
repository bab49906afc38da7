/**
 * Races and edge cases of durable steps, sleeps and signal waits found by review: a step body
 * that outlives its attempt, a signal whose wake was lost, a replayed wake, a sleep past the job's
 * dispatchBy, and two waits at once.
 */
import { describe, expect, it } from 'vitest';
import { incarnationOf } from '../../shared/core/table';
import type { JobContext } from '../../shared/runtime/job-definition';
import { echoJob, harness, redelivery, signalsOf, T0 } from './worker-harness';

const iso = (ms: number) => new Date(ms).toISOString();

describe('a step body never outlives its attempt', () => {
  /** A handler that sleeps beside a step in a Promise.all: the sleep ends the attempt while the step runs. */
  function beside(stepMs: number) {
    const seen = { runs: 0, running: 0, maxRunning: 0, aborted: 0 };
    const run = async (_p: unknown, ctx: JobContext) => {
      await Promise.all([
        ctx.step('charge', async () => {
          seen.runs += 1;
          seen.running += 1;
          seen.maxRunning = Math.max(seen.maxRunning, seen.running);
          // aborts while the body runs (ctx.signal also aborts once the attempt ends, after it)
          let onAbort = () => {};
          try {
            await new Promise<void>((resolve, reject) => {
              const timer = setTimeout(resolve, stepMs);
              onAbort = () => {
                clearTimeout(timer);
                seen.aborted += 1;
                reject(ctx.signal.reason);
              };
              ctx.signal.addEventListener('abort', onAbort, { once: true });
            });
          } finally {
            ctx.signal.removeEventListener('abort', onAbort);
            seen.running -= 1;
          }
          return 'charged';
        }),
        ctx.sleep('nap', '2s'),
      ]);
      return 'ok';
    };
    return { seen, run };
  }

  it('a step running beside a sleep that ends the attempt finishes and is recorded before the job waits', async () => {
    const { seen, run } = beside(200);
    const h = harness({ run });
    h.store.seed(echoJob('pa-1'));
    await h.worker(redelivery('pa-1'));
    expect(h.store.peek('pa-1')).toMatchObject({ state: 'waiting' });
    expect(seen).toMatchObject({ runs: 1, running: 0, aborted: 0 });
    expect(h.journal.count('pa-1', 'step')).toBe(1);
    h.clock.advance(2_000);
    await h.worker(redelivery('pa-1'));
    expect(seen).toMatchObject({ runs: 1, maxRunning: 1 });
    expect(h.store.peek('pa-1')).toMatchObject({ state: 'succeeded' });
  });

  it('one that runs past a heartbeat interval is aborted, and has stopped, before the job waits', async () => {
    const { seen, run } = beside(60_000);
    const h = harness({ run, leaseMs: 600 });
    h.store.seed(echoJob('pa-2'));
    await h.worker(redelivery('pa-2'));
    expect(h.store.peek('pa-2')).toMatchObject({ state: 'waiting' });
    expect(seen).toMatchObject({ runs: 1, running: 0, aborted: 1 });
    expect(h.journal.count('pa-2', 'step')).toBe(0);
  });
});

describe('a signal is never held until the timeout', () => {
  it('a waiting job whose signal is in its inbox but was never woken resumes when its message comes back', async () => {
    const h = harness({ run: async (_p, ctx) => ({ got: await ctx.waitForSignal('paid', { timeout: '1d' }) }) });
    h.store.seed(echoJob('ls-1'));
    await h.worker(redelivery('ls-1'));
    expect(h.store.peek('ls-1')).toMatchObject({ state: 'waiting', waitSignal: 'paid' });
    // the signal is stored, but its wake was lost (the sender died before it)
    await h.journal.deliver({
      jobId: 'ls-1',
      incarnation: incarnationOf(new Date(T0).toISOString()),
      name: 'paid',
      signal: { payload: 9, payloadHash: 'h', at: iso(T0) },
      expiresAt: 0,
    });
    h.clock.advance(60_000);
    await h.worker(redelivery('ls-1')); // e.g. the message of a worker that died after its suspend write
    await h.worker(redelivery('ls-1'));
    expect(h.store.peek('ls-1')).toMatchObject({ state: 'succeeded', result: { got: 9 } });
  });

  it('a failed inbox read after the suspend brings the message back soon, not at the timeout', async () => {
    const h = harness({ run: async (_p, ctx) => ({ got: await ctx.waitForSignal('paid', { timeout: '1d' }) }) });
    h.store.seed(echoJob('ls-2'));
    const look = h.journal.signal.bind(h.journal);
    let reads = 0;
    h.journal.signal = async (input) => {
      reads += 1;
      if (reads === 2) throw new Error('ThrottlingException');
      return look(input);
    };
    await h.worker(redelivery('ls-2'));
    expect(h.store.peek('ls-2')).toMatchObject({ state: 'waiting' });
    expect(h.queue.visibility.at(-1)?.seconds).toBeLessThanOrEqual(60);
  });
});

describe('a replayed wake still sends the message', () => {
  it('wake is idempotent: a second wake of the same signal finds the job woken, and says so', async () => {
    const h = harness({ run: async (_p, ctx) => ({ got: await ctx.waitForSignal('paid', { timeout: '1d' }) }) });
    h.store.seed(echoJob('rw-1'));
    await h.worker(redelivery('rw-1'));
    expect(await h.store.wake({ id: 'rw-1', signal: 'paid', now: T0 + 10 })).toMatchObject({ runAt: iso(T0 + 10) });
    // the first response was lost: the replay (SDK, or the caller's retry) must still count as woken
    expect(await h.store.wake({ id: 'rw-1', signal: 'paid', now: T0 + 20 })).toMatchObject({ id: 'rw-1' });
    // another signal does not
    expect(await h.store.wake({ id: 'rw-1', signal: 'shipped', now: T0 + 20 })).toBeUndefined();
  });
});

describe('a wait that outlasts the dispatch deadline', () => {
  it('a job that slept past its dispatchBy resumes: it had started', async () => {
    const h = harness({
      run: async (_p, ctx) => {
        await ctx.sleep('nap', '2h');
        return 'woke';
      },
    });
    h.store.seed(echoJob('db-1', { dispatchBy: iso(T0 + 60_000) }));
    await h.worker(redelivery('db-1'));
    expect(h.store.peek('db-1')).toMatchObject({ state: 'waiting' });
    h.clock.advance(2 * 3_600_000);
    await h.worker(redelivery('db-1'));
    expect(h.store.peek('db-1')).toMatchObject({ state: 'succeeded', result: 'woke' });
  });
});

describe('two waits at once', () => {
  it('a signal wait and a sleep in Promise.all: the job is due at the earlier end, and the signal still wakes it', async () => {
    const h = harness({
      run: async (_p, ctx) => {
        const [got] = await Promise.all([ctx.waitForSignal('paid', { timeout: '1d' }), ctx.sleep('nap', '2h')]);
        return { got };
      },
    });
    h.store.seed(echoJob('tw-1'));
    await h.worker(redelivery('tw-1'));
    expect(h.store.peek('tw-1')).toMatchObject({
      state: 'waiting',
      runAt: iso(T0 + 2 * 3_600_000),
      waitSignal: 'paid',
    });
  });
});

describe('two signal waits at once', () => {
  it('fails the job: a waiting job is woken by one signal', async () => {
    const h = harness({
      run: async (_p, ctx) => {
        try {
          return await Promise.all([
            ctx.waitForSignal('a', { timeout: '1h' }),
            ctx.waitForSignal('b', { timeout: '1h' }),
          ]);
        } catch {
          return 'swallowed';
        }
      },
    });
    h.store.seed(echoJob('tw-2'));
    await h.worker(redelivery('tw-2'));
    expect(h.store.peek('tw-2')).toMatchObject({
      state: 'failed',
      lastError: { name: 'StepUsageError', message: expect.stringContaining('one signal at a time') },
    });
  });
});

describe('POST /jobs/{id}/signals/{name} when the message of the job it woke cannot be sent', () => {
  it('answers 503 naming the job; the same signal again wakes it again and sends the message', async () => {
    const h = harness({ run: async (_p, ctx) => ({ got: await ctx.waitForSignal('paid', { timeout: '1d' }) }) });
    h.store.seed(echoJob('sg-503'));
    await h.worker(redelivery('sg-503'));
    const service = signalsOf(h);
    h.queue.failNext('send', new Error('SQS unavailable'));
    await expect(service.send('sg-503', 'paid', { payload: 1 })).rejects.toMatchObject({
      name: 'DependencyError',
      details: { jobId: 'sg-503' },
    });
    const sent = h.queue.sent.length;
    expect(await service.send('sg-503', 'paid', { payload: 1 })).toMatchObject({
      created: false,
      receipt: { resumed: true, duplicate: true },
    });
    expect(h.queue.sent.length).toBe(sent + 1);
    await h.worker(redelivery('sg-503'));
    expect(h.store.peek('sg-503')).toMatchObject({ state: 'succeeded', result: { got: 1 } });
  });
});
