/**
 * Debounce's invariants under concurrency: concrete interleavings on the in-memory ports, and a
 * seeded scheduler that stalls every port call of every enqueue (open, create, get, skip, window
 * read) and lets them go in random orders. Every case checks that a burst has a run, that no
 * chain of replacements cycles or ends in a job that does not run, and, without client retries,
 * that a burst runs once. `DEBOUNCE_INTERLEAVINGS=4000` explores more seeds.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import type { Job } from '../../shared/core/job';
import { defineJobType, type JobTypeSpec } from '../../shared/core/job-type';
import { payloadHash } from '../../shared/core/payload-hash';
import { sqsEvent } from '../support/fakes';
import { FakePacer } from '../support/flow-fakes';
import { debouncePayload, debounceSetup, stallCreates } from './debounce-harness';
import { messageFor, T0 } from './worker-harness';

const payload = debouncePayload;
const specOf = (extra: Record<string, unknown> = {}) =>
  defineJobType({
    type: 'echo',
    payload,
    debounce: { key: (p) => p.catalog, periodSeconds: 5 },
    ...extra,
  }) as JobTypeSpec;

const setup = debounceSetup;

/**
 * j's first request opens the window (seq 1) and stalls before its write; k opens it (seq 2) and
 * stalls; j's retry opens it (seq 3) and stalls. Then j's first request writes j, the retry's
 * create finds it, and k is written last. Returns the retry's answer.
 */
async function retryLosesCreate(
  h: ReturnType<typeof setup>['h'],
  enqueue: ReturnType<typeof setup>['enqueue'],
): Promise<{ retry: Awaited<ReturnType<typeof enqueue>> }> {
  const { until, release } = stallCreates(h, ['j#0', 'k#0', 'j#1']);
  const first = enqueue('j', 1);
  await until('j#0');
  const newer = enqueue('k', 2);
  await until('k#0');
  const retried = enqueue('j', 1);
  await until('j#1');
  release('j#0');
  await first;
  release('j#1');
  const retry = await retried;
  release('k#0');
  await newer;
  return { retry };
}

/** Delivers each job's message once it is due (a minute on): the worker runs, or skips, each. */
async function deliverDue(h: ReturnType<typeof setup>['h'], ids: string[]) {
  h.clock.set(T0 + 60_000);
  for (const id of ids) await h.worker(sqsEvent(messageFor(id)));
}

/** The runs among `ids` (not skipped, not failed), and a check of every replacement chain. */
function judge(peek: (id: string) => Job | undefined, ids: string[]) {
  const problems: string[] = [];
  const live = ids.filter((id) => {
    const s = peek(id)?.state;
    return s === 'queued' || s === 'scheduled' || s === 'running' || s === 'succeeded';
  });
  for (const id of ids) {
    const seen = new Set<string>();
    let cur: string | undefined = id;
    while (cur !== undefined) {
      if (seen.has(cur)) {
        problems.push(`cycle from ${id}: ${[...seen].join(' -> ')} -> ${cur}`);
        break;
      }
      seen.add(cur);
      const job = peek(cur);
      if (!job) {
        problems.push(`chain from ${id} reaches missing ${cur}`);
        break;
      }
      if (job.state !== 'skipped') break;
      if (job.skipReason?.kind !== 'debounce') {
        if (cur !== id) problems.push(`chain from ${id} ends in ${cur}, skipped by ${job.skipReason?.kind}`);
        break;
      }
      cur = job.skipReason.by;
    }
  }
  return { live, problems };
}

describe('debounce interleavings', () => {
  it('never neither: a job turned away by its rate limit does not end the pending run it would replace', async () => {
    // A type with both a debounce and a rate limit (nothing forbids it). j1 is accepted and is the
    // pending run. j2 is over the rate: it is written `skipped` (rate-limit), but it has opened the
    // window (debounce() runs before rateLimited()) and then, being "created", ends the run it
    // replaced. Neither job runs: j1 points to j2, which never runs.
    const pacer = new FakePacer();
    const spec = specOf({ rateLimit: { limit: 1, periodSeconds: 3600, key: (p: { catalog: string }) => p.catalog } });
    const { h, enqueue, jobs } = setup(spec, pacer);
    expect((await enqueue('j1', 1)).job.state).toBe('queued');
    expect((await enqueue('j2', 2)).job).toMatchObject({ state: 'skipped', skipReason: { kind: 'rate-limit' } });
    const { live } = judge((id) => h.store.peek(id), ['j1', 'j2']);
    expect(
      live,
      `j1 ${JSON.stringify(h.store.peek('j1')?.skipReason)}, debouncedInto ${(await jobs.get('j1')).debouncedInto}`,
    ).toHaveLength(1);
  });

  it('one run per burst: three concurrent distinct enqueues whose writes land in the order 2nd, 1st, 3rd', async () => {
    // No retry, no replay. a, c, b open the window in that order (seqs 1, 2, 3; c replaces a, b
    // replaces c) and their writes stall. c is written: it cannot find a (not written) and the
    // window's run, b, does not exist yet, so c stays. a is written: it replaced nothing, and the
    // window's run, b, still does not exist, so a stays. b is written and ends c. a and b both run:
    // a was replaced only by c, which could not find it, and a stepped aside only for a written
    // run (b was not). The "one of the two always sees the other" argument holds for two jobs,
    // not for a job whose replacer and whose window's run are two different jobs.
    const { h, enqueue, ran } = setup(specOf());
    const create = h.store.create.bind(h.store);
    const gates = new Map<string, () => void>();
    h.store.create = async (job) => {
      await new Promise<void>((resolve) => gates.set(job.id, resolve));
      return create(job);
    };
    const until = async (id: string) => {
      while (!gates.has(id)) await new Promise((r) => setTimeout(r, 1));
    };
    const a = enqueue('a', 1);
    await until('a');
    const c = enqueue('c', 2);
    await until('c');
    const b = enqueue('b', 3);
    await until('b');
    gates.get('c')?.();
    await c;
    gates.get('a')?.();
    await a;
    gates.get('b')?.();
    await b;
    // enqueue leaves a and b pending; when they are due, a gives way to b (the later open)
    await deliverDue(h, ['a', 'b', 'c']);
    const { live, problems } = judge((id) => h.store.peek(id), ['a', 'b', 'c']);
    expect(problems).toEqual([]);
    expect(live, ['a', 'b', 'c'].map((id) => `${id}:${h.store.peek(id)?.state}`).join(' ')).toEqual(['b']);
    expect(ran).toEqual([{ catalog: 'c1', rev: 3 }]);
    expect(h.store.peek('a')).toMatchObject({ state: 'skipped', skipReason: { kind: 'debounce', by: 'b' } });
  });

  it('one run per burst, with the last payload: an older job written after the newer run started does not run again', async () => {
    // y opens the window (seq 1) and its write stalls (longer than the period); x opens it (seq 2,
    // replaces y, which it cannot find), is written, becomes due, starts, and closes the window.
    // Then y is written: it replaced nothing, and the window has no run, so it stays, and runs
    // after x with the older payload.
    const { h, enqueue, ran } = setup(specOf());
    const create = h.store.create.bind(h.store);
    let release = () => {};
    const stalled = new Promise<void>((resolve) => {
      release = resolve;
    });
    let yStalled = false;
    h.store.create = async (job) => {
      if (job.id === 'y') {
        yStalled = true;
        await stalled;
      }
      return create(job);
    };
    const y = enqueue('y', 1);
    while (!yStalled) await new Promise((r) => setTimeout(r, 1));
    h.clock.set(T0 + 1000);
    await enqueue('x', 2);
    h.clock.set(T0 + 6000);
    await h.worker(sqsEvent(messageFor('x')));
    expect(h.store.peek('x')?.state).toBe('succeeded');
    release();
    await y;
    h.clock.set(T0 + 60_000);
    await h.worker(sqsEvent(messageFor('y')));
    expect(ran, `y ${h.store.peek('y')?.state}`).toEqual([{ catalog: 'c1', rev: 2 }]);
  });

  it('a retry whose create loses to the first request (stored seq 1, open seq 3) leaves a run, and no job is ended by a seq it does not hold', async () => {
    // j's first request opens (seq 1) and stalls before its write; k opens (seq 2, replaces j) and
    // stalls; j's retry opens (seq 3, replaces k) and stalls; j's first request writes j with seq
    // 1; the retry's create finds it and returns it (no replace of k with seq 3); then k is
    // written and ends j (1 < 2). k stays the run: the window's run (j) is skipped.
    const { h, enqueue } = setup(specOf());
    const { retry } = await retryLosesCreate(h, enqueue);
    expect(h.store.peek('j')?.debounceSeq).toBe(1);
    expect(retry).toMatchObject({ created: false });
    const { live, problems } = judge((id) => h.store.peek(id), ['j', 'k']);
    expect(problems).toEqual([]);
    expect(live).toEqual(['k']);
    expect(h.store.peek('j')).toMatchObject({ state: 'skipped', skipReason: { by: 'k' } });
  });

  it('after a retry whose create lost, the window does not go on naming a skipped job (debouncedInto, and the next window)', async () => {
    // The same interleaving as above: j (stored seq 1) is skipped by k, but the window's run is
    // j (the retry's open came last) and stays so: k's start cannot close it (its run is j).
    // Then GET of j says debouncedInto: j (itself, a skipped job) instead of k, and the window
    // never closes: a job of the next burst joins a window that began at T0, so with a maxWait
    // it is due at once instead of after the quiet period.
    const { h, enqueue, jobs, ran } = setup(
      defineJobType({
        type: 'echo',
        payload,
        debounce: { key: (p) => p.catalog, periodSeconds: 5, maxWaitSeconds: 60 },
      }) as JobTypeSpec,
    );
    await retryLosesCreate(h, enqueue);
    expect(h.store.peek('j')).toMatchObject({ state: 'skipped', skipReason: { by: 'k' } });
    expect.soft((await jobs.get('j')).debouncedInto, 'debouncedInto of j').toBe('k');
    h.clock.set(T0 + 10_000);
    await h.worker(sqsEvent(messageFor('k')));
    expect(ran).toEqual([{ catalog: 'c1', rev: 2 }]);
    // a later burst: its window begins with its first job
    h.clock.set(T0 + 120_000);
    expect
      .soft((await enqueue('m', 3)).job.runAt, 'runAt of the next burst')
      .toBe(new Date(T0 + 125_000).toISOString());
  });
});

/**
 * A scheduler for enqueues: every call of the store (get, create, skip) and of the debouncer
 * (open, state) made for an actor waits until the scheduler lets it go; the scheduler picks one
 * waiting actor at a time at random (a seeded PRNG), so the run is one interleaving.
 */
function explore(seed: number, actors: { id: string; rev: number; at?: number }[], options: { worker?: boolean } = {}) {
  let state = seed >>> 0 || 1;
  const rand = () => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 2 ** 32;
  };
  const { h, enqueue, ran } = setup(specOf());
  const als = new AsyncLocalStorage<string>();
  const waiting: { actor: string; what: string; go: () => void }[] = [];
  const trace: string[] = [];
  const gate = async (what: string) => {
    const actor = als.getStore();
    if (actor === undefined) return;
    await new Promise<void>((go) => waiting.push({ actor, what, go }));
  };
  const wrap = <T extends object>(target: T, names: string[]) => {
    for (const name of names) {
      const original = (target as Record<string, (...args: unknown[]) => Promise<unknown>>)[name]?.bind(target);
      if (!original) continue;
      (target as Record<string, unknown>)[name] = async (...args: unknown[]) => {
        const arg = args[0] as { id?: string; jobId?: string; job?: { id: string } } | string;
        const about = typeof arg === 'string' ? arg : (arg?.id ?? arg?.jobId ?? arg?.job?.id ?? '');
        await gate(`${name}(${about})`);
        return original(...args);
      };
    }
  };
  wrap(h.store, ['get', 'create', 'skip', 'claim']);
  wrap(h.debouncer, ['open', 'state', 'close']);
  const settle = () => new Promise((r) => setImmediate(r));
  return {
    h,
    ran,
    trace,
    async run() {
      let n = 0;
      const done = new Set<string>();
      const outcomes: Promise<unknown>[] = [];
      const start = (name: string, fn: () => Promise<unknown>) => {
        outcomes.push(
          als
            .run(name, fn)
            .catch((e: unknown) => trace.push(`${name} threw ${String(e)}`))
            .finally(() => done.add(name)),
        );
      };
      for (const a of actors) start(`${a.id}#${n++}`, () => enqueue(a.id, a.rev));
      if (options.worker) {
        // a worker that, at a random point, starts the job that is the window's run (if due)
        start('worker', async () => {
          // a few scheduling points first, so that its read lands anywhere among the enqueues'
          for (let i = 0; i < 8; i++) await gate('wait');
          const window = await h.debouncer.state({ scope: 'echo~d', key: 'c1' });
          const target = window.run;
          if (target === undefined) return;
          h.clock.set(T0 + 60_000);
          await h.worker(sqsEvent(messageFor(target)));
        });
      }
      for (;;) {
        for (let i = 0; i < 5; i++) await settle();
        if (waiting.length === 0) break;
        const pick = waiting.splice(Math.floor(rand() * waiting.length), 1)[0];
        if (!pick) break;
        trace.push(`${pick.actor}: ${pick.what}`);
        pick.go();
      }
      await Promise.all(outcomes);
      return done;
    },
  };
}

describe('debounce interleavings: random orders', { timeout: 300_000 }, () => {
  const runs = Number(process.env.DEBOUNCE_INTERLEAVINGS ?? 400);

  it('distinct concurrent enqueues: exactly one run, no cycle', async () => {
    for (let seed = 1; seed <= runs; seed++) {
      const ex = explore(seed, [
        { id: 'a', rev: 1 },
        { id: 'b', rev: 2 },
        { id: 'c', rev: 3 },
      ]);
      await ex.run();
      // then each is delivered when due, in an order of the seed's
      await deliverDue(ex.h, seed % 2 === 0 ? ['a', 'b', 'c'] : ['c', 'b', 'a']);
      expect(ex.ran, `seed ${seed}`).toHaveLength(1);
      const { live, problems } = judge((id) => ex.h.store.peek(id), ['a', 'b', 'c']);
      const states = ['a', 'b', 'c'].map((id) => `${id}:${ex.h.store.peek(id)?.state}`).join(' ');
      expect(problems, `seed ${seed} ${states}\n${ex.trace.join('\n')}`).toEqual([]);
      expect(live, `seed ${seed} ${states}\n${ex.trace.join('\n')}`).toHaveLength(1);
    }
  });

  it('with client retries of ids not yet written: at least one run, no cycle, every chain ends in a run', async () => {
    for (let seed = 1; seed <= runs; seed++) {
      const ex = explore(seed, [
        { id: 'a', rev: 1 },
        { id: 'b', rev: 2 },
        { id: 'a', rev: 1 },
        { id: 'b', rev: 2 },
      ]);
      await ex.run();
      const { live, problems } = judge((id) => ex.h.store.peek(id), ['a', 'b']);
      const states = ['a', 'b'].map((id) => `${id}:${ex.h.store.peek(id)?.state}`).join(' ');
      expect(problems, `seed ${seed} ${states}\n${ex.trace.join('\n')}`).toEqual([]);
      expect(live.length, `seed ${seed} ${states}\n${ex.trace.join('\n')}`).toBeGreaterThanOrEqual(1);
    }
  });

  it('three jobs and a retry: at least one run, no cycle', async () => {
    for (let seed = 1; seed <= runs; seed++) {
      const ex = explore(seed, [
        { id: 'a', rev: 1 },
        { id: 'b', rev: 2 },
        { id: 'c', rev: 3 },
        { id: 'a', rev: 1 },
      ]);
      await ex.run();
      const { live, problems } = judge((id) => ex.h.store.peek(id), ['a', 'b', 'c']);
      const states = ['a', 'b', 'c'].map((id) => `${id}:${ex.h.store.peek(id)?.state}`).join(' ');
      expect(problems, `seed ${seed} ${states}\n${ex.trace.join('\n')}`).toEqual([]);
      expect(live.length, `seed ${seed} ${states}\n${ex.trace.join('\n')}`).toBeGreaterThanOrEqual(1);
    }
  });

  it("with a worker starting the window's run at a random point: never neither, nothing skipped once started", async () => {
    let started = 0;
    for (let seed = 1; seed <= runs; seed++) {
      const ex = explore(
        seed,
        [
          { id: 'a', rev: 1 },
          { id: 'b', rev: 2 },
          { id: 'a', rev: 1 },
          { id: 'c', rev: 3 },
        ],
        { worker: true },
      );
      await ex.run();
      const ids = ['a', 'b', 'c'];
      const { live, problems } = judge((id) => ex.h.store.peek(id), ids);
      const states = ids.map((id) => `${id}:${ex.h.store.peek(id)?.state}/${ex.h.store.peek(id)?.attempts}`).join(' ');
      const why = `seed ${seed} ${states}\n${ex.trace.join('\n')}`;
      expect(problems, why).toEqual([]);
      expect(live.length, why).toBeGreaterThanOrEqual(1);
      for (const id of ids) {
        const job = ex.h.store.peek(id);
        if (job?.state === 'skipped') expect(job.attempts, why).toBe(0);
      }
      if (ids.some((id) => ex.h.store.peek(id)?.state === 'succeeded')) started++;
    }
    // the worker did start runs in many of these interleavings
    expect(started).toBeGreaterThan(runs / 10);
  });

  it("with a pending run written before debounceSeq existed (the window's run): at least one run, no cycle", async () => {
    for (let seed = 1; seed <= runs; seed++) {
      const ex = explore(seed, [
        { id: 'a', rev: 1 },
        { id: 'b', rev: 2 },
        { id: 'a', rev: 1 },
        { id: 'L', rev: 0 },
      ]);
      // L: a pending run of the key, written by the code before the seq (no debounceSeq)
      await ex.h.debouncer.open({ scope: 'echo~d', key: 'c1', jobId: 'L', now: T0 });
      await ex.h.store.create({
        id: 'L',
        type: 'echo',
        state: 'queued',
        payload: { catalog: 'c1', rev: 0 },
        payloadHash: payloadHash('echo', { catalog: 'c1', rev: 0 }),
        attempts: 0,
        maxAttempts: 3,
        createdAt: new Date(T0).toISOString(),
        updatedAt: new Date(T0).toISOString(),
        runAt: new Date(T0 + 5000).toISOString(),
        leaseToken: 0,
        errors: [],
        debounceKey: 'c1',
        debounceWindow: T0,
      } as Job);
      await ex.run();
      const ids = ['a', 'b', 'L'];
      const { live, problems } = judge((id) => ex.h.store.peek(id), ids);
      const states = ids.map((id) => `${id}:${ex.h.store.peek(id)?.state}`).join(' ');
      const why = `seed ${seed} ${states}\n${ex.trace.join('\n')}`;
      expect(problems, why).toEqual([]);
      expect(live.length, why).toBeGreaterThanOrEqual(1);
    }
  });
});
