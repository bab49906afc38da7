/**
 * `ctx.invoke` on the in-memory ports (FakeJobStore, FakeJobGraph, FakeJournal, FakeJobQueue):
 * a parent starts children once per name, ends its attempt while they run, and resumes once,
 * after the last, with their results; a failed child throws InvokedJobFailedError, recorded.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ControlService } from '../../shared/api/control-service';
import { ManualClock } from '../../shared/core/clock';
import { invokedChildId } from '../../shared/core/invoke';
import { jobMessage } from '../../shared/core/job';
import { defineJobType } from '../../shared/core/job-type';
import { payloadHash } from '../../shared/core/payload-hash';
import { incarnationOf } from '../../shared/core/table';
import { InvokedJobFailedError, PermanentError } from '../../shared/errors';
import { createLogger } from '../../shared/logger';
import { createWorker } from '../../shared/runtime/worker';
import { FakeJobControl } from '../support/control-fakes';
import {
  captureLogs,
  FakeJobQueue,
  FakeJobScheduler,
  FakeJobStore,
  newJob,
  sqsRecord,
  testConfig,
} from '../support/fakes';
import { FakeJobGraph } from '../support/graph-fakes';
import { FakeJournal } from '../support/journal-fake';

const T0 = Date.parse('2026-03-01T12:00:00.000Z');

const parentSpec = defineJobType({
  type: 'parent',
  payload: z.object({
    children: z.number(),
    failAt: z.number().optional(),
    catchFailure: z.boolean().optional(),
    sleepBeside: z.boolean().optional(),
  }),
  timeoutMs: 60_000,
  retry: { maxAttempts: 2, backoff: { kind: 'constant', delayMs: 1000 } },
});
const childSpec = defineJobType({
  type: 'child',
  payload: z.object({ n: z.number(), fail: z.boolean().optional() }),
  timeoutMs: 5000,
  retry: { maxAttempts: 1, backoff: { kind: 'constant', delayMs: 1000 } },
});

function platform() {
  const store = new FakeJobStore();
  const graph = new FakeJobGraph(store);
  const queue = new FakeJobQueue();
  const journal = new FakeJournal();
  const clock = new ManualClock(T0);
  const logs = captureLogs();
  const logger = createLogger({ level: 'debug', sink: logs.sink });
  const config = testConfig(['parent', 'child']);
  /** Each run of the parent's handler, with what it saw. */
  const parentRuns: { results?: unknown[]; error?: string }[] = [];
  const childRuns: string[] = [];
  const deps = { config, store, queue, journal, graph, clock, logger, owner: 'w' };
  const parent = createWorker(
    {
      spec: parentSpec,
      run: async (input, ctx) => {
        const payload = input as z.output<typeof parentSpec.payload>;
        const run: { results?: unknown[]; error?: string } = {};
        parentRuns.push(run);
        try {
          if (payload.sleepBeside) {
            await Promise.all([ctx.invoke('c0', 'child', { n: 0 }), ctx.sleep('nap', '1h')]);
          }
          const results = await Promise.all(
            Array.from({ length: payload.children }, (_, n) =>
              ctx.invoke<{ doubled: number }>(`c${n}`, 'child', { n, ...(n === payload.failAt ? { fail: true } : {}) }),
            ),
          );
          run.results = results;
          return { sum: results.reduce((a, r) => a + r.doubled, 0) };
        } catch (error) {
          if (error instanceof InvokedJobFailedError) {
            run.error = error.message;
            if (payload.catchFailure) return { caught: error.childState };
          }
          throw error;
        }
      },
    },
    deps,
  );
  const child = createWorker(
    {
      spec: childSpec,
      run: async (input, ctx) => {
        const payload = input as z.output<typeof childSpec.payload>;
        childRuns.push(ctx.jobId);
        if (payload.fail) throw new PermanentError(`child ${payload.n} fails`);
        return { doubled: payload.n * 2 };
      },
    },
    deps,
  );
  let delivered = 0;
  /** Delivers every message sent, in order, until none is left (a kept message comes back once more). */
  async function drain(limit = 100_000): Promise<void> {
    for (let n = 0; delivered < queue.sent.length && n < limit; n++) {
      const sent = queue.sent[delivered++];
      if (!sent) break;
      const worker = sent.queueUrl.endsWith('orrery-parent') ? parent : child;
      const out = await worker({ Records: [sqsRecord(sent.message, { messageId: `m${delivered}` })] });
      if (out.batchItemFailures.length > 0) queue.sent.push({ ...sent });
    }
  }
  async function enqueueParent(id: string, payload: z.input<typeof parentSpec.payload>) {
    const job = newJob({ id, type: 'parent', payload, maxAttempts: 2, createdAt: new Date(T0).toISOString() });
    store.seed(job);
    await queue.send(config.routes.parent?.queueUrl ?? '', jobMessage(job));
  }
  const control = new ControlService({
    config,
    catalog: [parentSpec, childSpec],
    store,
    control: new FakeJobControl(store),
    queue,
    scheduler: new FakeJobScheduler(),
    clock,
    log: logger,
    graph,
  });
  return {
    store,
    graph,
    queue,
    journal,
    clock,
    logs: logs.lines,
    parentRuns,
    childRuns,
    drain,
    enqueueParent,
    control,
  };
}

describe('ctx.invoke', () => {
  it('starts a child, ends the attempt while it runs, and resumes with its result', async () => {
    const p = platform();
    await p.enqueueParent('order-1', { children: 1 });
    await p.drain();
    const childId = invokedChildId('order-1', 'c0');
    expect(childId).toBe('order-1.c0');
    expect(p.store.peek(childId)?.state).toBe('succeeded');
    const parent = p.store.peek('order-1');
    expect(parent?.state).toBe('succeeded');
    expect(parent?.result).toEqual({ sum: 0 });
    // two runs: the first waits (no attempt spent), the second returns the child's result
    expect(p.parentRuns).toEqual([{}, { results: [{ doubled: 0 }] }]);
    expect(parent?.attempts).toBe(1);
    expect(parent?.resumes).toBe(1);
    expect(p.childRuns).toEqual(['order-1.c0']);
  });

  it('suspends once for a Promise.all of 3 invokes, and resumes once, after the last child', async () => {
    const p = platform();
    await p.enqueueParent('fan-3', { children: 3 });
    await p.drain();
    expect(p.parentRuns).toHaveLength(2);
    expect(p.parentRuns[1]?.results).toEqual([{ doubled: 0 }, { doubled: 2 }, { doubled: 4 }]);
    expect(p.store.peek('fan-3')).toMatchObject({ state: 'succeeded', result: { sum: 6 }, resumes: 1 });
    expect(p.childRuns.sort()).toEqual(['fan-3.c0', 'fan-3.c1', 'fan-3.c2']);
  });

  it('throws InvokedJobFailedError for a failed child, and a replay throws the same from the journal', async () => {
    const p = platform();
    await p.enqueueParent('fails', { children: 2, failAt: 1, catchFailure: true });
    await p.drain();
    expect(p.store.peek('fails.c1')?.state).toBe('failed');
    expect(p.store.peek('fails')).toMatchObject({ state: 'succeeded', result: { caught: 'failed' } });
    expect(p.parentRuns[1]?.error).toMatch(
      /invoked job fails\.c1 \("c1"\) ended failed: PermanentError: child 1 fails/,
    );
    // recorded: the outcome is in the parent's journal
    const scope = { jobId: 'fails', incarnation: incarnationOf(new Date(T0).toISOString()) };
    const entries = await p.journal.load(scope);
    expect(entries.get('invoked#c1')?.value).toMatchObject({ state: 'failed', error: { name: 'PermanentError' } });
    expect(entries.get('invoked#c0')?.value).toEqual({ state: 'succeeded', result: { doubled: 0 } });
  });

  it('fails the parent for good when it lets the error through', async () => {
    const p = platform();
    await p.enqueueParent('fails-hard', { children: 1, failAt: 0 });
    await p.drain();
    const parent = p.store.peek('fails-hard');
    expect(parent?.state).toBe('failed');
    expect(parent?.lastError?.name).toBe('InvokedJobFailedError');
    // a permanent error: no second attempt replays the same outcome
    expect(p.parentRuns).toHaveLength(2);
  });

  it('never starts a second child on a replay: a delivery of the parent again finds the child it started', async () => {
    const p = platform();
    await p.enqueueParent('replay', { children: 1 });
    // the parent's first run only: it starts the child and waits
    const first = p.queue.sent[0];
    if (!first) throw new Error('no message');
    await p.drain(1);
    expect(p.store.peek('replay')?.state).toBe('waiting');
    expect(p.store.peek('replay')?.pendingParents).toBe(1);
    const creates = () => p.store.calls.filter((c) => c.method === 'create' && c.id === 'replay.c0').length;
    expect(creates()).toBe(1);
    // the parent's message again (a duplicate): the claim is refused, nothing is started
    p.queue.sent.push({ ...first });
    await p.drain();
    expect(creates()).toBe(1);
    expect(p.childRuns).toEqual(['replay.c0']);
    expect(p.store.peek('replay')?.state).toBe('succeeded');
  });

  it('counts a child that ended before its parent waited (its release found the parent running)', async () => {
    const p = platform();
    // the child exists and ended already, under the id the invoke derives
    await p.enqueueParent('early', { children: 1 });
    p.store.seed(
      newJob({
        id: 'early.c0',
        type: 'child',
        state: 'succeeded',
        payload: { n: 0 },
        payloadHash: payloadHash('child', { n: 0 }),
        result: { doubled: 0 },
        createdAt: new Date(T0).toISOString(),
      }),
    );
    await p.drain();
    expect(p.childRuns).toEqual([]);
    expect(p.store.peek('early')).toMatchObject({ state: 'succeeded', result: { sum: 0 }, attempts: 1, resumes: 1 });
    expect(p.parentRuns).toEqual([{}, { results: [{ doubled: 0 }] }]);
  });

  it('a look that failed after the wait is made again when the kept message comes back', async () => {
    const p = platform();
    await p.enqueueParent('look', { children: 1 });
    // its child ended already: only the parent's look after its wait can count it
    p.store.seed(
      newJob({
        id: 'look.c0',
        type: 'child',
        state: 'succeeded',
        payload: { n: 0 },
        payloadHash: payloadHash('child', { n: 0 }),
        result: { doubled: 0 },
        createdAt: new Date(T0).toISOString(),
      }),
    );
    p.graph.failNext('jobs', new Error('throttled'));
    await p.drain();
    expect(p.logs.some((l) => String(l.message).startsWith('could not look at the invoked jobs'))).toBe(true);
    expect(p.store.peek('look')).toMatchObject({ state: 'succeeded', result: { sum: 0 }, resumes: 1 });
    expect(p.parentRuns).toHaveLength(2);
  });

  it('refuses an invoke beside a sleep in one attempt: the job fails (StepUsageError)', async () => {
    const p = platform();
    await p.enqueueParent('mixed', { children: 0, sleepBeside: true });
    await p.drain();
    expect(p.store.peek('mixed')?.state).toBe('failed');
    expect(p.store.peek('mixed')?.lastError?.name).toBe('StepUsageError');
    expect(p.store.peek('mixed')?.lastError?.message).toMatch(/an invoke \("c0"\) and a sleep wait at once/);
  });

  it('cancelling the waiting parent ends it; its child runs, and its release changes nothing', async () => {
    const p = platform();
    await p.enqueueParent('cancelled', { children: 1 });
    await p.drain(1); // the parent's first run: it starts its child and waits
    expect(p.store.peek('cancelled')?.state).toBe('waiting');
    await p.control.cancel('cancelled');
    await p.drain();
    expect(p.store.peek('cancelled')?.state).toBe('cancelled');
    expect(p.store.peek('cancelled.c0')?.state).toBe('succeeded');
    expect(p.childRuns).toEqual(['cancelled.c0']);
    expect(p.parentRuns).toHaveLength(1);
  });

  it('fans out 10,000 children: the parent resumes once and reads them in pages of 100', async () => {
    const p = platform();
    await p.enqueueParent('big', { children: 10_000 });
    const reads: number[] = [];
    const jobs = p.graph.jobs.bind(p.graph);
    p.graph.jobs = async (ids) => {
      reads.push(ids.length);
      return jobs(ids);
    };
    await p.drain();
    expect(p.childRuns).toHaveLength(10_000);
    expect(p.parentRuns).toHaveLength(2);
    const parent = p.store.peek('big');
    expect(parent).toMatchObject({ state: 'succeeded', resumes: 1 });
    expect((parent?.result as { sum: number } | undefined)?.sum).toBe(10_000 * 9_999);
    expect(Math.max(...reads)).toBeLessThanOrEqual(100);
  }, 120_000);
});

describe('ctx.invoke and payload references', () => {
  it("refuses a child payload shaped like an offloaded value's reference: the child would read the object it names", async () => {
    const store = new FakeJobStore();
    const queue = new FakeJobQueue();
    const config = testConfig(['parent', 'child']);
    const lookalike = { $orreryBlob: 1, key: 'p/someone-else/secret', bytes: 1 };
    const parent = createWorker(
      { spec: parentSpec, run: async (_input, ctx) => await ctx.invoke('c0', 'child', lookalike) },
      {
        config,
        store,
        queue,
        journal: new FakeJournal(),
        graph: new FakeJobGraph(store),
        clock: new ManualClock(T0),
        logger: createLogger({ level: 'silent' }),
        owner: 'w',
      },
    );
    const job = newJob({ id: 'peek', type: 'parent', payload: { children: 1 }, maxAttempts: 1 });
    store.seed(job);
    await parent({ Records: [sqsRecord(jobMessage(job), { messageId: 'm1' })] });
    expect(store.peek(invokedChildId('peek', 'c0'))).toBeUndefined();
    expect(store.peek('peek')).toMatchObject({ state: 'failed', lastError: { name: 'StepUsageError' } });
  });
});
