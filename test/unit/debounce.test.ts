/**
 * Debounce at enqueue (the API's JobsService) and in the worker, on in-memory ports (FakeDebouncer
 * passes the same contract as DynamoDebouncer). On local AWS: test/integration/flow-debounce.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { type Debouncer, debounceProblem, debounceRunAt, MAX_DEBOUNCE_WAIT_SECONDS } from '../../shared/core/debounce';
import { MAX_HORIZON_SECONDS } from '../../shared/core/enqueue';
import type { Job } from '../../shared/core/job';
import { defineJobType, type JobTypeSpec } from '../../shared/core/job-type';
import { newerDebounceRun } from '../../shared/runtime/debounce-gate';
import { sqsEvent } from '../support/fakes';
import { debouncePayload, debounceSetup } from './debounce-harness';
import { echoJob, messageFor, T0 } from './worker-harness';

const payload = debouncePayload;
const specOf = (maxWaitSeconds?: number) =>
  defineJobType({
    type: 'echo',
    payload,
    debounce: { key: (p) => p.catalog, periodSeconds: 5, ...(maxWaitSeconds ? { maxWaitSeconds } : {}) },
  }) as JobTypeSpec;
const iso = (ms: number) => new Date(ms).toISOString();

const setup = (spec: JobTypeSpec) => debounceSetup(spec);

/** Waits until key c1's open window names `id` as its run. */
async function untilWindowRun(debouncer: Debouncer, id: string): Promise<void> {
  while ((await debouncer.state({ scope: 'echo~d', key: 'c1' }))?.run !== id)
    await new Promise((r) => setTimeout(r, 1));
}

describe('debounce', () => {
  it('makes the newest job of a key the run, due when the key has been quiet; the jobs it replaced are skipped and point to it', async () => {
    const { h, jobs, enqueue, ran } = setup(specOf());
    expect((await enqueue('j1', 1)).job).toMatchObject({ state: 'queued', runAt: iso(T0 + 5000), debounceKey: 'c1' });
    h.clock.set(T0 + 1000);
    await enqueue('j2', 2);
    h.clock.set(T0 + 2000);
    await enqueue('j3', 3);
    await enqueue('other', 9, 'c2'); // another key: its own window
    expect(h.store.peek('j1')).toMatchObject({
      state: 'skipped',
      skipReason: { kind: 'debounce', key: 'c1', by: 'j2' },
    });
    expect(h.store.peek('j2')).toMatchObject({ state: 'skipped', skipReason: { kind: 'debounce', by: 'j3' } });
    expect(h.store.peek('j3')).toMatchObject({ state: 'queued', runAt: iso(T0 + 7000) });
    expect((await jobs.get('j3')).waitingFor).toEqual({
      kind: 'debounce',
      key: 'c1',
      since: iso(T0 + 2000),
      until: iso(T0 + 7000),
    });
    // each points to the run, following the chain
    expect((await jobs.get('j1')).debouncedInto).toBe('j3');
    expect((await jobs.get('j2')).debouncedInto).toBe('j3');
    expect((await jobs.get('j3')).debouncedInto).toBeUndefined();
    // the replaced jobs' messages find them finished; the run starts when due, with the last payload
    for (const id of ['j1', 'j2']) await h.worker(sqsEvent(messageFor(id)));
    h.clock.set(T0 + 7000);
    await h.worker(sqsEvent(messageFor('j3')));
    await h.worker(sqsEvent(messageFor('other')));
    expect(ran).toEqual([
      { catalog: 'c1', rev: 3 },
      { catalog: 'c2', rev: 9 },
    ]);
    // the run closed its window: the next job opens a new one, and replaces nothing
    expect(await h.debouncer.state({ scope: 'echo~d', key: 'c1' })).toEqual({ lastRun: 'j3', lastFirst: T0 });
    // the replaced jobs still point to the run, now from the closed window
    expect((await jobs.get('j1')).debouncedInto).toBe('j3');
    h.clock.set(T0 + 8000);
    expect((await enqueue('j4', 4)).job).toMatchObject({ state: 'queued', runAt: iso(T0 + 13_000) });
    expect(h.store.peek('j3')?.state).toBe('succeeded');
  });

  it('starts the run no later than maxWaitSeconds after the window began, however busy the key', async () => {
    const { h, enqueue } = setup(specOf(6));
    await enqueue('j1', 1);
    h.clock.set(T0 + 4000);
    expect((await enqueue('j2', 2)).job.runAt).toBe(iso(T0 + 6000)); // not T0 + 9 s
    h.clock.set(T0 + 7000);
    expect((await enqueue('j3', 3)).job.runAt).toBe(iso(T0 + 7000)); // overdue: at once
    expect(debounceRunAt(T0, T0, { periodSeconds: 5, maxWaitSeconds: 6 })).toBe(T0 + 5000);
  });

  it('does not let a replay of a replaced job take the run back, and refuses a delay', async () => {
    const { h, enqueue, jobs } = setup(specOf());
    await enqueue('j1', 1);
    await enqueue('j2', 2);
    expect(await enqueue('j1', 1)).toMatchObject({ created: false, job: { state: 'skipped' } });
    expect(await h.debouncer.state({ scope: 'echo~d', key: 'c1' })).toMatchObject({ run: 'j2' });
    expect(h.store.peek('j2')?.state).toBe('queued');
    await expect(
      jobs.enqueue({ type: 'echo', id: 'j9', payload: { catalog: 'c1', rev: 9 }, delaySeconds: 10 }),
    ).rejects.toMatchObject({ code: 'debounced_type', issues: [{ path: 'delaySeconds' }] });
    expect(h.store.peek('j9')).toBeUndefined();
  });

  it('keeps one run when a newer job opened the window while the older one was still being written', async () => {
    const { h, enqueue } = setup(specOf());
    const create = h.store.create.bind(h.store);
    let release = () => {};
    const written = new Promise<void>((resolve) => {
      release = resolve;
    });
    h.store.create = async (job) => {
      if (job.id === 'j1') await written;
      return create(job);
    };
    const first = enqueue('j1', 1); // opens the window, then stalls before its write
    while ((await h.debouncer.state({ scope: 'echo~d', key: 'c1' }))?.run !== 'j1')
      await new Promise((r) => setTimeout(r, 1));
    await enqueue('j2', 2); // replaces j1, which it cannot find yet
    expect(h.store.peek('j1')).toBeUndefined();
    release();
    expect((await first).job).toMatchObject({ state: 'skipped', skipReason: { kind: 'debounce', by: 'j2' } });
    expect(h.store.peek('j1')?.state).toBe('skipped');
    expect(h.store.peek('j2')?.state).toBe('queued');
  });

  it('never leaves a key without a run when a replay of a job still being written reopens its window', async () => {
    const { h, enqueue } = setup(specOf());
    const create = h.store.create.bind(h.store);
    const stalls = new Map<string, { gate: Promise<void>; release: () => void; calls: number }>();
    for (const id of ['j', 'k']) {
      let release = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      stalls.set(id, { gate, release, calls: 0 });
    }
    h.store.create = async (job) => {
      const stall = stalls.get(job.id);
      if (stall && stall.calls++ === 0) await stall.gate; // each one's first write stalls
      return create(job);
    };
    const until = (id: string) => untilWindowRun(h.debouncer, id);
    const first = enqueue('j', 1); // opens the window, then its write stalls
    await until('j');
    const newer = enqueue('k', 2); // opens the window after j, then its write stalls
    await until('k');
    // the client timed out on j and sends it again: j is not written yet, so this is no replay
    // to the API; it opens the window again and writes j
    await enqueue('j', 1);
    stalls.get('j')?.release();
    await first;
    stalls.get('k')?.release(); // k is written; the window's last open was j's retry, so j is the run
    await newer;
    const states = ['j', 'k'].map((id) => h.store.peek(id)?.state);
    expect(
      states.filter((state) => state === 'queued'),
      `states ${states.join(', ')}`,
    ).toHaveLength(1);
    // the retry of j came after k: j is the run (with its payload, as docs/flow-control.md says)
    expect(h.store.peek('j')?.state).toBe('queued');
    expect(h.store.peek('k')).toMatchObject({ state: 'skipped', skipReason: { kind: 'debounce', by: 'j' } });
  });

  it('never has two jobs replace each other when a replay reopens the window between them', async () => {
    // j's first request opens the window and its write stalls; k opens it after j; the client's
    // retry of j opens it again after k and writes j. Then k replaces j (the window said j came
    // before k) while j replaces k (the window said k came before j): before the windows counted
    // their opens, both ended skipped, each pointing to the other, and the key had no run.
    const { h, enqueue } = setup(specOf());
    const gate = () => {
      let release = () => {};
      const done = new Promise<void>((resolve) => {
        release = resolve;
      });
      return { done, release };
    };
    const jWrite = gate();
    const kWrite = gate();
    const jReadsK = gate();
    const jAtK = gate();
    const create = h.store.create.bind(h.store);
    let jCreates = 0;
    let kCreates = 0;
    h.store.create = async (job) => {
      if (job.id === 'j' && jCreates++ === 0) await jWrite.done;
      if (job.id === 'k' && kCreates++ === 0) await kWrite.done;
      return create(job);
    };
    const get = h.store.get.bind(h.store);
    let holdKReads = false;
    h.store.get = async (id) => {
      if (id === 'k' && holdKReads) {
        holdKReads = false;
        jAtK.release();
        await jReadsK.done;
      }
      return get(id);
    };
    const until = (id: string) => untilWindowRun(h.debouncer, id);
    const first = enqueue('j', 1); // opens the window, then its write stalls
    await until('j');
    const newer = enqueue('k', 2); // opens the window after j, then its write stalls
    await until('k');
    holdKReads = true;
    const retry = enqueue('j', 1); // opens it again after k, writes j, and goes to replace k
    await jAtK.done; // ... and is about to read k
    kWrite.release(); // k is written and replaces j
    await newer;
    jReadsK.release(); // j reads k, still pending as far as it is concerned
    await retry;
    jWrite.release();
    await first;
    const states = Object.fromEntries(['j', 'k'].map((id) => [id, h.store.peek(id)?.state]));
    expect(
      Object.values(states).filter((state) => state === 'queued'),
      `states ${JSON.stringify(states)}`,
    ).toHaveLength(1);
    for (const id of ['j', 'k']) {
      const job = h.store.peek(id);
      if (job?.state !== 'skipped') continue;
      // its replacement is the run, not a job replaced in turn
      const by = job.skipReason?.kind === 'debounce' ? job.skipReason.by : undefined;
      expect(by === undefined ? undefined : h.store.peek(by)?.state, `${id} skipped by ${by}`).toBe('queued');
    }
  });

  it("does not skip an operator's retry of a held run for a newer run of its key: the retried run ran already", async () => {
    const { h, enqueue, ran } = setup(specOf());
    await enqueue('j1', 1);
    h.clock.set(T0 + 5000);
    await h.worker(sqsEvent(messageFor('j1')));
    // j1 ran, and is held for an operator (its replay diverged) as its attempt ends
    h.store.seed({ ...(h.store.peek('j1') as Job), state: 'held' });
    h.clock.set(T0 + 6000);
    await enqueue('j2', 2); // a newer run of the key, pending
    const retried = await h.control.restart({ id: 'j1', from: ['held'], now: T0 + 7000 });
    expect(retried).toMatchObject({ kind: 'applied', job: { state: 'queued', attempts: 0, retries: 1 } });
    h.clock.set(T0 + 7000);
    await h.worker(sqsEvent(messageFor('j1', { messageId: 'm-j1-retry' })));
    expect(h.store.peek('j1')).toMatchObject({ state: 'succeeded', retries: 1 });
    expect(ran).toEqual([
      { catalog: 'c1', rev: 1 },
      { catalog: 'c1', rev: 1 },
    ]);
  });

  it('a pending older run still gives way to a newer run that an operator restarted (it started before)', async () => {
    const { h } = setup(specOf());
    const base = { type: 'echo', debounceKey: 'c1', state: 'queued' as const, attempts: 0 };
    h.store.seed({ ...echoJob('old'), ...base, id: 'old', debounceSeq: 1, leaseToken: 0 });
    // the newer run ran (token 1), was held, and an operator retried it: queued at attempts 0 again
    h.store.seed({ ...echoJob('new'), ...base, id: 'new', debounceSeq: 2, leaseToken: 1, retries: 1 });
    await h.debouncer.open({ scope: 'echo~d', key: 'c1', jobId: 'new', now: T0 });
    await h.debouncer.close({ scope: 'echo~d', key: 'c1', jobId: 'new' });
    const old = h.store.peek('old') as Job;
    expect((await newerDebounceRun({ store: h.store, debouncer: h.debouncer }, 'echo', old, T0))?.id).toBe('new');
    // and the restarted run itself gives way to none: it is no pending run
    const restarted = h.store.peek('new') as Job;
    expect(await newerDebounceRun({ store: h.store, debouncer: h.debouncer }, 'echo', restarted, T0)).toBeUndefined();
  });

  it('runs both when the replaced run started first (never neither)', async () => {
    const { h, enqueue, ran } = setup(specOf());
    await enqueue('j1', 1);
    h.clock.set(T0 + 5000);
    // j1 is claimed, and j2 is enqueued before j1's window is closed: the worker's close fails
    h.debouncer.close = async () => {};
    await h.worker(sqsEvent(messageFor('j1')));
    await enqueue('j2', 2);
    expect(h.store.peek('j1')?.state).toBe('succeeded');
    expect(h.store.peek('j2')?.state).toBe('queued');
    h.clock.set(T0 + 10_000);
    await h.worker(sqsEvent(messageFor('j2')));
    expect(ran).toEqual([
      { catalog: 'c1', rev: 1 },
      { catalog: 'c1', rev: 2 },
    ]);
  });

  it('refuses a bad declaration, and allows waits up to the delay horizon', () => {
    expect(MAX_DEBOUNCE_WAIT_SECONDS).toBe(MAX_HORIZON_SECONDS);
    expect(debounceProblem({ periodSeconds: 0 })).toMatch(/periodSeconds must be an integer/);
    expect(debounceProblem({ periodSeconds: 10, maxWaitSeconds: 5 })).toMatch(
      /maxWaitSeconds must be an integer from periodSeconds/,
    );
    expect(debounceProblem({ periodSeconds: 10, key: 'c' })).toMatch(/key must be a function/);
    expect(debounceProblem({ periodSeconds: 10, maxWaitSeconds: MAX_HORIZON_SECONDS })).toBeUndefined();
  });
});
