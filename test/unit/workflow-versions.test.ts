/**
 * Code versions in the worker (shared/runtime/workflow.ts, shared/core/replay.ts), on the
 * in-memory ports: a job that slept on one version of its handler resumes on another. A renamed,
 * removed or reordered step fails the attempt with a NondeterminismError and holds the job
 * (`held`, reason `nondeterministic`, no retry, no onFailure, its dependants kept waiting), with
 * no step body of the new code run; an unchanged handler and a `ctx.patched` branch go on.
 */
import { describe, expect, it } from 'vitest';
import { CANCELLABLE_STATES, RETRYABLE_STATES } from '../../shared/core/control';
import type { Job } from '../../shared/core/job';
import { JOURNAL_RETENTION_DAYS } from '../../shared/core/journal';
import { classifyRefusedClaim } from '../../shared/core/lease';
import { incarnationOf } from '../../shared/core/table';
import { gone } from '../../shared/dispatch/line-keeper';
import { createLogger } from '../../shared/logger';
import type { JobContext } from '../../shared/runtime/job-definition';
import { mustWaitFor } from '../../shared/runtime/scheduling';
import { planJobRepair } from '../../shared/supervisor/plan';
import { FakeJobControl } from '../local-aws/memory-control';
import { echoJob, harness, logged, messageFor, oneAtATimeSpec, redelivery, signalsOf, T0 } from './worker-harness';

const HOUR = 3_600_000;
type Handler = (payload: unknown, ctx: JobContext) => Promise<unknown>;

/** A worker whose handler can be swapped between deliveries (a deploy), and the step bodies each version ran. */
function deployable(first: Handler) {
  let current = first;
  const h = harness({ run: (payload, ctx) => current(payload, ctx) });
  return {
    h,
    deploy(next: Handler) {
      current = next;
    },
  };
}

/** Counts the step bodies run, by name. */
function counter() {
  const runs: Record<string, number> = {};
  const body = (name: string) => () => {
    runs[name] = (runs[name] ?? 0) + 1;
    return name;
  };
  return { runs, body };
}

const { runs, body } = counter();
/** Version 1: a, b, a sleep, c. */
const v1: Handler = async (_p, ctx) => {
  await ctx.step('a', body('a'));
  await ctx.step('b', body('b'));
  await ctx.sleep('nap', '2h');
  return await ctx.step('c', body('c'));
};

/** Runs v1 up to its sleep, deploys `next`, and wakes the job on it. */
async function resumeOn(id: string, next: Handler): Promise<Job> {
  const { h, deploy } = deployable(v1);
  h.store.seed(echoJob(id));
  await h.worker(redelivery(id));
  expect(h.store.peek(id)).toMatchObject({ state: 'waiting' });
  deploy(next);
  h.clock.advance(2 * HOUR);
  await h.worker(redelivery(id));
  return h.store.peek(id) as Job;
}

describe('a replay on changed code', () => {
  it('an unchanged handler resumes and runs only what is new', async () => {
    for (const k of Object.keys(runs)) delete runs[k];
    const job = await resumeOn('v-same', v1);
    expect(job).toMatchObject({ state: 'succeeded', result: 'c' });
    expect(runs).toEqual({ a: 1, b: 1, c: 1 });
  });

  it.each([
    [
      'renamed',
      async (_p: unknown, ctx: JobContext) => {
        await ctx.step('a', body('a'));
        await ctx.step('b-renamed', body('b-renamed'));
        await ctx.sleep('nap', '2h');
        return await ctx.step('c', body('c'));
      },
      'position 1: the journal recorded step "b" (version local:',
      'this code called step "b-renamed"',
    ],
    [
      'removed',
      async (_p: unknown, ctx: JobContext) => {
        await ctx.step('a', body('a'));
        await ctx.sleep('nap', '2h');
        return await ctx.step('c', body('c'));
      },
      'position 1: the journal recorded step "b"',
      'this code called sleep "nap"',
    ],
    [
      'reordered',
      async (_p: unknown, ctx: JobContext) => {
        await ctx.step('b', body('b'));
        await ctx.step('a', body('a'));
        await ctx.sleep('nap', '2h');
        return await ctx.step('c', body('c'));
      },
      'position 0: the journal recorded step "a"',
      'this code called step "b"',
    ],
  ] as const)(
    'a %s step fails the attempt (nondeterministic) and holds the job',
    async (what, next, recorded, called) => {
      for (const k of Object.keys(runs)) delete runs[k];
      const job = await resumeOn(`v-${what}`, next as Handler);
      expect(job.state).toBe('held');
      expect(job.lastError).toMatchObject({ name: 'NondeterminismError', reason: 'nondeterministic' });
      expect(job.lastError?.message).toContain(recorded);
      expect(job.lastError?.message).toContain(called);
      // both versions: the one that recorded the entry and the one running now
      expect(job.lastError?.message).toMatch(/\(version local:[0-9a-f]{12}\)$|\(version local:[0-9a-f]{12}\)\. /);
      // not retried: one attempt, and no step body of the new code ran
      expect(job.attempts).toBe(1);
      expect(runs).toEqual({ a: 1, b: 1 });
    },
  );

  it('racing await chains that start in another order on replay are not taken for a divergence', async () => {
    const slow = (ms: number, value: string) => () => new Promise<string>((r) => setTimeout(() => r(value), ms));
    const run: Handler = async (_p, ctx) => {
      // chain one's first step is slow, so chain two's second step begins before chain one's
      // second; on a replay (no step body runs) chain one's goes first
      const chains = await Promise.all([
        (async () => [await ctx.step('s1', slow(40, 's1')), await ctx.step('s2', slow(0, 's2'))])(),
        (async () => {
          const s3 = await ctx.step('s3', slow(0, 's3'));
          // work outside steps between them: on a replay, s4 begins once s2 is over
          await new Promise((r) => setTimeout(r, 10));
          return [s3, await ctx.step('s4', slow(0, 's4'))];
        })(),
      ]);
      await ctx.sleep('nap', '2h');
      return [...chains.flat(), await ctx.step('after', () => 'after')];
    };
    const { h } = deployable(run);
    h.store.seed(echoJob('v-race'));
    await h.worker(redelivery('v-race'));
    const entries = await h.journal.load({ jobId: 'v-race', incarnation: incarnationOf(new Date(T0).toISOString()) });
    // recorded in the order they began: s4 before s2
    expect(entries.get('step#s4')?.mark?.seq).toBeLessThan(entries.get('step#s2')?.mark?.seq as number);
    h.clock.advance(2 * HOUR);
    await h.worker(redelivery('v-race'));
    expect(h.store.peek('v-race')).toMatchObject({ state: 'succeeded', result: ['s1', 's2', 's3', 's4', 'after'] });
  });

  it('racing chains with work outside steps: a call that begins quiet on replay but raced on the first run is not a divergence', async () => {
    const slow = (ms: number, value: string) => () => new Promise<string>((r) => setTimeout(() => r(value), ms));
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const run: Handler = async (_p, ctx) => {
      // first run: s1 is slow, so s4 (after s3 and 10 ms) begins while s1 runs, before s2; on a
      // replay s1 and s3 return at once, and s2 (after 1 ms) begins with no call in flight
      const chains = await Promise.all([
        (async () => {
          const s1 = await ctx.step('s1', slow(40, 's1'));
          await pause(1);
          return [s1, await ctx.step('s2', slow(0, 's2'))];
        })(),
        (async () => {
          const s3 = await ctx.step('s3', slow(0, 's3'));
          await pause(10);
          return [s3, await ctx.step('s4', slow(0, 's4'))];
        })(),
      ]);
      await ctx.sleep('nap', '2h');
      return [...chains.flat(), await ctx.step('after', () => 'after')];
    };
    const { h } = deployable(run);
    h.store.seed(echoJob('v-race-quiet'));
    await h.worker(redelivery('v-race-quiet'));
    const entries = await h.journal.load({
      jobId: 'v-race-quiet',
      incarnation: incarnationOf(new Date(T0).toISOString()),
    });
    expect(entries.get('step#s4')?.mark?.seq).toBe(2);
    expect(entries.get('step#s2')?.mark?.seq).toBe(3);
    h.clock.advance(2 * HOUR);
    await h.worker(redelivery('v-race-quiet'));
    expect(h.store.peek('v-race-quiet')?.lastError).toBeUndefined();
    expect(h.store.peek('v-race-quiet')).toMatchObject({
      state: 'succeeded',
      result: ['s1', 's2', 's3', 's4', 'after'],
    });
  });

  it('a step renamed after a wait whose signal came before the wait is caught before its body runs', async () => {
    for (const k of Object.keys(runs)) delete runs[k];
    const { h, deploy } = deployable(async (_p, ctx) => {
      await ctx.step('a', body('a'));
      await ctx.waitForSignal('go');
      await ctx.step('b', body('b'));
      await ctx.sleep('nap', '2h');
      return await ctx.step('c', body('c'));
    });
    h.store.seed(echoJob('v-early-signal'));
    // sent before the job ran: the API records the wait's outcome (with no mark), and the
    // wait finds it, so the job's journal has no marked entry for the wait
    await signalsOf(h).send('v-early-signal', 'go', { payload: { ok: true } });
    await h.worker(redelivery('v-early-signal'));
    expect(h.store.peek('v-early-signal')).toMatchObject({ state: 'waiting' });
    expect(runs).toEqual({ a: 1, b: 1 });
    deploy(async (_p, ctx) => {
      await ctx.step('a', body('a'));
      await ctx.waitForSignal('go');
      await ctx.step('b-renamed', body('b-renamed'));
      await ctx.sleep('nap', '2h');
      return await ctx.step('c', body('c'));
    });
    h.clock.advance(2 * HOUR);
    await h.worker(redelivery('v-early-signal'));
    const job = h.store.peek('v-early-signal') as Job;
    expect(job).toMatchObject({ state: 'held', lastError: { name: 'NondeterminismError' } });
    expect(job.lastError?.message).toContain('position 2: the journal recorded step "b"');
    // held before any step body of the new code ran (the renamed step's work is not done again)
    expect(runs).toEqual({ a: 1, b: 1 });
  });

  it("a step called inside another step's body replays: the outer step's recorded result stands for both", async () => {
    for (const k of Object.keys(runs)) delete runs[k];
    const { h } = deployable(async (_p, ctx) => {
      const outer = await ctx.step('outer', async () => `${await ctx.step('inner', body('inner'))}+outer`);
      await ctx.sleep('nap', '2h');
      return [outer, await ctx.step('c', body('c'))];
    });
    h.store.seed(echoJob('v-nested'));
    await h.worker(redelivery('v-nested'));
    expect(h.store.peek('v-nested')).toMatchObject({ state: 'waiting' });
    h.clock.advance(2 * HOUR);
    await h.worker(redelivery('v-nested'));
    expect(h.store.peek('v-nested')?.lastError).toBeUndefined();
    expect(h.store.peek('v-nested')).toMatchObject({ state: 'succeeded', result: ['inner+outer', 'c'] });
    expect(runs).toEqual({ inner: 1, c: 1 });
  });

  it('a handler that catches the error is held all the same', async () => {
    const job = await resumeOn('v-caught', async (_p, ctx) => {
      try {
        await ctx.step('other', () => 'x');
      } catch {
        return 'swallowed';
      }
      return 'no';
    });
    expect(job).toMatchObject({ state: 'held', lastError: { name: 'NondeterminismError' } });
  });

  it('a step removed at the end: the run returns without a recorded call', async () => {
    const { h, deploy } = deployable(async (_p, ctx) => {
      await ctx.step('a', () => 1);
      await ctx.step('b', () => 2);
      await ctx.sleep('nap', '2h');
      return 'done';
    });
    h.store.seed(echoJob('v-end'));
    await h.worker(redelivery('v-end'));
    deploy(async (_p, ctx) => {
      await ctx.step('a', () => 1);
      return 'early';
    });
    h.clock.advance(2 * HOUR);
    await h.worker(redelivery('v-end'));
    const job = h.store.peek('v-end') as Job;
    expect(job).toMatchObject({ state: 'held', lastError: { name: 'NondeterminismError' } });
    expect(job.lastError?.message).toContain('the journal recorded step "b"');
    expect(job.lastError?.message).toContain('this code ended the run without reaching it');
  });

  it('each entry records its position and the code version, in the same write', async () => {
    const { h } = deployable(async (_p, ctx) => {
      await ctx.step('a', () => 1);
      await ctx.step('b', () => 2);
      return 'ok';
    });
    h.store.seed(echoJob('v-mark'));
    await h.worker(redelivery('v-mark'));
    const entries = await h.journal.load({ jobId: 'v-mark', incarnation: incarnationOf(new Date(T0).toISOString()) });
    expect(entries.get('step#a')?.mark).toMatchObject({
      seq: 0,
      version: expect.stringMatching(/^local:[0-9a-f]{12}$/),
    });
    expect(entries.get('step#b')?.mark).toMatchObject({ seq: 1 });
    expect(h.journal.calls.filter((c) => c.method === 'record')).toHaveLength(2);
  });
});

describe('ctx.patched', () => {
  /** Version 2 adds a step after the sleep, behind a patch. */
  const v2: Handler = async (_p, ctx) => {
    await ctx.step('a', body('a'));
    await ctx.step('b', body('b'));
    await ctx.sleep('nap', '2h');
    const checked = (await ctx.patched('fraud-check')) ? await ctx.step('fraud', body('fraud')) : 'skipped';
    return [checked, await ctx.step('c', body('c'))];
  };

  it('a run that started on old code and had passed the point takes the old path', async () => {
    for (const k of Object.keys(runs)) delete runs[k];
    // old code: the patch point is before the sleep, which the run had passed
    const old: Handler = async (_p, ctx) => {
      await ctx.step('a', body('a'));
      await ctx.step('b', body('b'));
      await ctx.sleep('nap', '2h');
      return await ctx.step('c', body('c'));
    };
    const { h, deploy } = deployable(old);
    h.store.seed(echoJob('p-old'));
    await h.worker(redelivery('p-old'));
    deploy(async (_p, ctx) => {
      await ctx.step('a', body('a'));
      const patched = await ctx.patched('before-b');
      if (patched) await ctx.step('b-new', body('b-new'));
      else await ctx.step('b', body('b'));
      await ctx.sleep('nap', '2h');
      return [patched, await ctx.step('c', body('c'))];
    });
    h.clock.advance(2 * HOUR);
    await h.worker(redelivery('p-old'));
    expect(h.store.peek('p-old')).toMatchObject({ state: 'succeeded', result: [false, 'c'] });
    expect(runs).toEqual({ a: 1, b: 1, c: 1 });
  });

  it('a run that reaches the point on new code takes the new path, and keeps it on every replay', async () => {
    for (const k of Object.keys(runs)) delete runs[k];
    // the run slept on old code before the point: on new code it reaches the point first
    const job = await resumeOn('p-new', v2);
    expect(job).toMatchObject({ state: 'succeeded', result: ['fraud', 'c'] });
    expect(runs).toEqual({ a: 1, b: 1, fraud: 1, c: 1 });
  });

  it('the patch is written on the next entry, and a later replay still answers true', async () => {
    let answers: boolean[] = [];
    const { h } = deployable(async (_p, ctx) => {
      await ctx.step('a', () => 1);
      answers.push(await ctx.patched('fix'));
      await ctx.step('b', () => 2);
      await ctx.sleep('nap', '2h');
      return 'ok';
    });
    h.store.seed(echoJob('p-kept'));
    await h.worker(redelivery('p-kept'));
    expect(answers).toEqual([true]);
    const entries = await h.journal.load({ jobId: 'p-kept', incarnation: incarnationOf(new Date(T0).toISOString()) });
    expect(entries.get('step#b')?.mark?.patches).toEqual(['fix']);
    answers = [];
    h.clock.advance(2 * HOUR);
    await h.worker(redelivery('p-kept'));
    expect(answers).toEqual([true]);
    expect(h.store.peek('p-kept')).toMatchObject({ state: 'succeeded' });
  });
});

describe('a held job (its replay diverged)', () => {
  const renamed: Handler = async (_p, ctx) => {
    await ctx.step('a', () => 'a');
    await ctx.step('b-renamed', () => 'b');
    await ctx.sleep('nap', '2h');
    return await ctx.step('c', () => 'c');
  };

  /** v1 up to its sleep, then `renamed` deployed and woken: the job is held. */
  async function heldJob(id: string, onFailure?: () => Promise<void>) {
    let current: Handler = async (_p, ctx) => {
      await ctx.step('a', () => 'a');
      await ctx.step('b', () => 'b');
      await ctx.sleep('nap', '2h');
      return await ctx.step('c', () => 'c');
    };
    const h = harness({ run: (payload, ctx) => current(payload, ctx), ...(onFailure ? { onFailure } : {}) });
    h.store.seed(echoJob(id));
    await h.worker(redelivery(id));
    current = renamed;
    h.clock.advance(2 * HOUR);
    await h.worker(redelivery(id));
    return {
      h,
      deploy: (next: Handler) => {
        current = next;
      },
    };
  }

  it('is held, not failed: no onFailure, a "job held" line and metric (none for failed), no retry message', async () => {
    let hooks = 0;
    const { h } = await heldJob('v-held-hook', async () => {
      hooks += 1;
    });
    const job = h.store.peek('v-held-hook') as Job;
    expect(job).toMatchObject({ state: 'held', attempts: 1, lastError: { reason: 'nondeterministic' } });
    // the lease is gone (the same write as a fail); it is kept as long as its journal, not a failed job's 30 days
    expect(job.leaseOwner).toBeUndefined();
    expect(job.leaseExpiresAt).toBeUndefined();
    expect(job.expiresAt).toBe(Math.floor((T0 + 2 * HOUR) / 1000) + JOURNAL_RETENTION_DAYS * 86_400);
    expect(hooks).toBe(0);
    expect(h.metrics.sum('JobsHeld', 'echo')).toBe(1);
    expect(h.metrics.sum('JobsFailed', 'echo')).toBe(0);
    expect(h.metrics.sum('JobsRetried', 'echo')).toBe(0);
    const held = logged(h.logs, 'job held');
    expect(held).toHaveLength(1);
    expect(held[0]).toMatchObject({ level: 'error', reason: 'nondeterministic', jobId: 'v-held-hook' });
    expect(logged(h.logs, 'job failed')).toHaveLength(0);
  });

  it('a later delivery of its message runs nothing and leaves it held', async () => {
    let called = 0;
    const { h, deploy } = await heldJob('v-held-dup');
    deploy(async () => {
      called += 1;
      return 'x';
    });
    h.clock.advance(HOUR);
    await h.worker(redelivery('v-held-dup'));
    expect(called).toBe(0);
    expect(h.store.peek('v-held-dup')).toMatchObject({ state: 'held', attempts: 1 });
  });

  it("an operator's retry after a fix runs it again on the recorded journal; a cancel ends it", async () => {
    const { h, deploy } = await heldJob('v-held-retry');
    const control = new FakeJobControl(h.store);
    const now = h.clock.now();
    const restarted = await control.restart({ id: 'v-held-retry', from: RETRYABLE_STATES, now });
    expect(restarted).toMatchObject({ kind: 'applied', job: { state: 'queued', attempts: 0 } });
    let ranB = 0;
    deploy(async (_p, ctx) => {
      await ctx.step('a', () => 'a');
      await ctx.step('b', () => {
        ranB += 1;
        return 'b';
      });
      await ctx.sleep('nap', '2h');
      return await ctx.step('c', () => 'c');
    });
    // the recorded sleep has ended: the replay of a, b and the nap goes on to c
    await h.worker(redelivery('v-held-retry'));
    expect(h.store.peek('v-held-retry')).toMatchObject({ state: 'succeeded', result: 'c', retries: 1 });
    expect(ranB).toBe(0); // the recorded b stands

    const other = await heldJob('v-held-cancel');
    const cancelled = await new FakeJobControl(other.h.store).cancel({
      id: 'v-held-cancel',
      from: CANCELLABLE_STATES,
      now: other.h.clock.now(),
      expiresAt: 1,
    });
    expect(cancelled).toMatchObject({ kind: 'applied', job: { state: 'cancelled' }, previous: { state: 'held' } });
  });

  it("outlives a finished job's retention: months after the hold, an operator can still cancel or retry it", async () => {
    // Its dependants (and a parent that invoked it) wait for the operator's choice: were it gone
    // with a finished job's retention (30 days here), nothing could ever release them.
    const { h } = await heldJob('v-held-kept');
    const heldAt = h.clock.now();
    const job = h.store.peek('v-held-kept') as Job;
    expect(job.expiresAt ?? 0).toBeGreaterThanOrEqual(Math.floor(heldAt / 1000) + JOURNAL_RETENTION_DAYS * 86_400);
    const control = new FakeJobControl(h.store);
    const later = heldAt + 200 * 24 * HOUR;
    expect(await control.restart({ id: 'v-held-kept', from: RETRYABLE_STATES, now: later })).toMatchObject({
      kind: 'applied',
      job: { state: 'queued' },
    });
    const other = await heldJob('v-held-kept-cancel');
    const cancelled = await new FakeJobControl(other.h.store).cancel({
      id: 'v-held-kept-cancel',
      from: CANCELLABLE_STATES,
      now: other.h.clock.now() + 200 * 24 * HOUR,
      expiresAt: 1,
    });
    expect(cancelled).toMatchObject({ kind: 'applied', previous: { state: 'held' } });
  });

  it('gives its concurrency slot back when its attempt ends: the next job of the limit runs', async () => {
    let current: Handler = async (_p, ctx) => {
      await ctx.step('a', () => 'a');
      await ctx.sleep('nap', '2h');
      return await ctx.step('c', () => 'c');
    };
    const h = harness({ spec: oneAtATimeSpec, run: (payload, ctx) => current(payload, ctx) });
    const slot = { scope: 'echo#0', key: '*' };
    h.store.seed(echoJob('v-held-slot'));
    await h.worker(redelivery('v-held-slot'));
    expect(h.store.peek('v-held-slot')).toMatchObject({ state: 'waiting' });
    current = async (_p, ctx) => {
      await ctx.step('a-renamed', () => 'a');
      return 'x';
    };
    h.clock.advance(2 * HOUR);
    await h.worker(redelivery('v-held-slot'));
    expect(h.store.peek('v-held-slot')).toMatchObject({ state: 'held' });
    expect((await h.flow.state(slot)).holders).toEqual([]);
    current = async () => 'next';
    h.store.seed(echoJob('v-after-held', { runAt: new Date(h.clock.now()).toISOString() }));
    await h.worker(redelivery('v-after-held'));
    expect(h.store.peek('v-after-held')).toMatchObject({ state: 'succeeded', result: 'next' });
  });

  it('the supervisor clears its due entry and resends nothing; a claim of it is refused as finished', () => {
    const job = {
      ...echoJob('v-held-plan'),
      state: 'held' as const,
      attempts: 1,
      updatedAt: new Date(T0).toISOString(),
    };
    expect(planJobRepair(job, 0, T0 + 24 * HOUR)).toEqual({ kind: 'clear' });
    expect(classifyRefusedClaim(job, T0 + HOUR, 'echo')).toEqual({ kind: 'finished', job });
    // a line's holder that is held gives no place back on its own: the line keeper frees it
    expect(gone(job, T0 + HOUR)).toBe(true);
  });

  it("a schedule's next run does not wait for a held run (it holds nothing)", async () => {
    const h = harness();
    h.store.seed({ ...echoJob('v-held-prev'), state: 'held', attempts: 1 });
    const waits = await mustWaitFor({
      after: 'v-held-prev',
      store: h.store,
      queue: h.queue,
      queueUrl: 'q',
      record: messageFor('v-held-next'),
      log: createLogger({ level: 'error' }),
    });
    expect(waits).toBe(false);
    h.store.seed({ ...echoJob('v-running-prev'), state: 'running', attempts: 1 });
    const behindRunning = await mustWaitFor({
      after: 'v-running-prev',
      store: h.store,
      queue: h.queue,
      queueUrl: 'q',
      record: messageFor('v-held-next'),
      log: createLogger({ level: 'error' }),
    });
    expect(behindRunning).toBe(true);
  });
});
