/**
 * Failing cases of a throttle's line (a type with priorities, shared/aws/pace-line.ts and the
 * gate shared/runtime/pace-gate.ts), on the in-memory ports: each test states the invariant it
 * breaks. They fail on purpose until the code is fixed; they are not `it.fails` so that a fix
 * shows up as a pass.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ManualClock } from '../../shared/core/clock';
import type { Job } from '../../shared/core/job';
import { defineJobType, type JobTypeSpec } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import { createPaceGate } from '../../shared/runtime/pace-gate';
import { FakeJobStore, newJob, sqsEvent } from '../support/fakes';
import { FakePacer } from '../support/flow-fakes';
import { latch } from '../support/latch';
import { harness, messageFor, T0 } from './worker-harness';

const payload = z.object({ n: z.number() });
const throttle = { limit: 1, periodSeconds: 2 }; // one start per 2 s, no burst
const ranked = defineJobType({
  type: 'echo',
  payload,
  timeoutMs: 1000,
  throttle,
  priority: { default: 0, agingSeconds: 30 },
}) as JobTypeSpec;
const plain = defineJobType({ type: 'echo', payload, timeoutMs: 1000, throttle }) as JobTypeSpec;
const iso = (ms: number) => new Date(ms).toISOString();
const job = (id: string, priority: number, runAt = T0) =>
  newJob({ id, type: 'echo', payload: { n: 1 }, priority, runAt: iso(runAt), throttleKey: '*' }, T0);
const log = createLogger({ level: 'error' });

/** Two gates of one type on shared ports: as the type was (`before`) and as a deploy made it (`after`). */
function deploy(before: JobTypeSpec, after: JobTypeSpec) {
  const pacer = new FakePacer();
  const store = new FakeJobStore();
  const clock = new ManualClock(T0);
  const gate = (spec: JobTypeSpec) =>
    createPaceGate({ spec, pacer, store, clock }) as NonNullable<ReturnType<typeof createPaceGate>>;
  return { pacer, store, clock, before: gate(before), after: gate(after) };
}

describe('throttle line review: the plain path and the line across a deploy', () => {
  it('a type that drops its priorities (or an old worker) does not start a job at its line estimate without a turn', async () => {
    const d = deploy(ranked, plain);
    for (const j of [job('first', 0), job('a', 0), job('b', 0), job('c', 0)]) d.store.seed(j);
    const turn = async (gate: typeof d.before, id: string) => gate.turn(d.store.peek(id) as Job, 1, log);
    expect(await turn(d.before, 'first')).toEqual({ kind: 'go' });
    // a waits in line: its waitingFor carries an estimate (`until`), not a turn taken for it
    expect(await turn(d.before, 'a')).toEqual({ kind: 'later', until: T0 + 2000 });
    expect(d.store.peek('a')?.waitingFor).toMatchObject({ kind: 'throttle', until: iso(T0 + 2000), token: 1 });
    // the type loses its priorities (a deploy, or its rollback); at T0 + 2 s a new job c takes
    // the free turn, and a comes back at its estimate
    d.clock.set(T0 + 2000);
    const starts: string[] = [];
    if ((await turn(d.after, 'c')).kind === 'go') starts.push('c');
    if ((await turn(d.after, 'a')).kind === 'go') starts.push('a');
    // GCRA: one start per 2 s. Broken: the plain path takes a's `until` for a turn it holds
    // (`w.token === token`), so a starts with no turn taken, beside c
    expect(starts).toHaveLength(1);
  });

  it('a type that gains priorities keeps the turns its waiting jobs already took', async () => {
    const d = deploy(plain, ranked);
    for (const j of [job('first', 0), job('a', 0)]) d.store.seed(j);
    expect(await d.before.turn(d.store.peek('first') as Job, 1, log)).toEqual({ kind: 'go' });
    // a took the next turn (the TAT moved for it) and waits for it
    expect(await d.before.turn(d.store.peek('a') as Job, 1, log)).toEqual({ kind: 'later', until: T0 + 2000 });
    expect(await d.pacer.state({ scope: 'echo~t', key: '*' })).toBe(T0 + 4000);
    // the type gains priorities while a waits; a comes at its turn
    d.clock.set(T0 + 2000);
    // Broken: the line path ignores the turn a holds, finds the TAT (T0 + 4 s) ahead and makes a
    // wait another interval: the turn at T0 + 2 s goes to nobody, and every job waiting across
    // the deploy waits its whole wait again
    expect(await d.after.turn(d.store.peek('a') as Job, 1, log)).toEqual({ kind: 'go' });
  });
});

describe('throttle line review: the worker', () => {
  it('a job between its join and its waitingFor write is not taken out of the line, and a worse-ranked job does not take its turn', async () => {
    const started: string[] = [];
    const h = harness({
      spec: ranked,
      run: async (_p, ctx) => {
        started.push(ctx.jobId);
        return 'ok';
      },
    });
    for (const j of [job('first', 0), job('low', 0), job('high', 9)]) h.store.seed(j);
    await h.worker(sqsEvent(messageFor('first')));
    await h.worker(sqsEvent(messageFor('low'))); // no turn free: low waits in line
    expect(started).toEqual(['first']);
    // high's markWaiting is slow (its join is written, its waitingFor not yet)
    const { open, reached, wait } = latch();
    const markWaiting = h.store.markWaiting.bind(h.store);
    h.store.markWaiting = async (input) => {
      if (input.job.id === 'high') await wait();
      return markWaiting(input);
    };
    h.clock.set(T0 + 2000); // a turn is free
    const high = h.worker(sqsEvent(messageFor('high')));
    await reached;
    // high is in line, first by rank
    expect((await h.pacer.line({ scope: 'echo~t', key: '*', max: 10 })).map((e) => e.jobId)).toEqual(['high', 'low']);
    // low comes back at its estimate meanwhile
    await h.worker(sqsEvent(messageFor('low', { messageId: 'm-low-back' })));
    open();
    await high;
    // Invariant: a free turn never goes to a job while a better-ranked one is in line. Broken:
    // willCome(high) reads no waitingFor yet, low takes high's entry out as stale and takes the
    // turn. (high keeps its rank, not this turn.)
    expect(started).toEqual(['first']);
  });

  it('a duplicate delivery that joins after its twin’s attempt failed does not block the line until the retry is due', async () => {
    const spec = defineJobType({
      type: 'echo',
      payload,
      timeoutMs: 1000,
      throttle: { limit: 1, periodSeconds: 2, burst: 2 }, // T = 2 s, τ = 2 s
      priority: { default: 0, agingSeconds: 30 },
      retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 3_600_000 } },
    }) as JobTypeSpec;
    const started: string[] = [];
    const h = harness({
      spec,
      run: async (_p, ctx) => {
        started.push(ctx.jobId);
        if (ctx.jobId === 'a') throw new Error('a fails its first attempt');
        return 'ok';
      },
    });
    for (const j of [job('first', 0), job('second', 0), job('a', 5), job('b', 0)]) h.store.seed(j);
    await h.worker(sqsEvent(messageFor('first')));
    await h.worker(sqsEvent(messageFor('second'))); // the burst is spent
    await h.worker(sqsEvent(messageFor('a')));
    await h.worker(sqsEvent(messageFor('b')));
    expect((await h.pacer.line({ scope: 'echo~t', key: '*', max: 10 })).map((e) => e.jobId)).toEqual(['a', 'b']);
    // a turn is free at T0 + 2 s, and a has two messages (its own back at its estimate, and the
    // one a waker sent it): the first one's read of the job is answered, then its worker stalls
    h.clock.set(T0 + 2000);
    const { open, reached, wait } = latch();
    const get = h.store.get.bind(h.store);
    let hold = true;
    h.store.get = async (id) => {
      const read = await get(id);
      if (id === 'a' && hold) {
        hold = false;
        await wait();
      }
      return read;
    };
    const own = h.worker(sqsEvent(messageFor('a', { messageId: 'm-a-own' })));
    await reached;
    // the other message of a takes the turn; the attempt fails, and a is retried in an hour
    await h.worker(sqsEvent(messageFor('a', { messageId: 'm-a-woken' })));
    expect(started).toEqual(['first', 'second', 'a']);
    expect(h.store.peek('a')).toMatchObject({ state: 'retrying', runAt: iso(T0 + 2000 + 3_600_000) });
    // the stalled delivery goes on, later, with its read from before the claim: a turn is free,
    // b is first, a is not in line: a joins again, and is recorded as waiting in line
    h.clock.set(T0 + 4000);
    open();
    await own;
    expect((await h.pacer.line({ scope: 'echo~t', key: '*', max: 10 })).map((e) => e.jobId)).toEqual(['a', 'b']);
    expect(h.store.peek('a')).toMatchObject({ state: 'retrying', waitingFor: { kind: 'throttle', key: '*' } });
    // b comes back, again and again, while turns are free (no one else waits)
    for (let t = 1; t <= 5; t++) {
      h.clock.set(T0 + 4000 + t * 10_000);
      await h.worker(sqsEvent(messageFor('b', { messageId: `m-b-${t}` })));
      await h.worker(sqsEvent(messageFor('a', { messageId: `m-a-woken-${t}` }))); // the wake b sends
    }
    // Invariant: the line drains. Broken: a's entry is first, and willCome(a) holds (a is
    // retrying, not ended, and its waitingFor names the line and rank), so b wakes a (not due
    // for an hour) and waits behind it: b cannot start until a's backoff ends, turns left unused
    expect(started).toContain('b');
  });
});
