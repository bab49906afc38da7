/**
 * Singletons in the worker, on in-memory ports: each mode, a retry under `skip`, and a scope that
 * two job types share. Handlers count how many run at once (physically, whatever the job's state).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ManualClock } from '../../shared/core/clock';
import type { Slot } from '../../shared/core/flow';
import { jobSlots } from '../../shared/core/job-slots';
import { defineJobType, type JobTypeSpec } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import { createWorker } from '../../shared/runtime/worker';
import { FakeJobControl } from '../support/control-fakes';
import { FakeJobQueue, FakeJobStore, newJob, sqsEvent, testConfig } from '../support/fakes';
import { FakeFlowSlots } from '../support/flow-fakes';
import { heldHandlers } from '../support/held-handlers';
import { echoJob, harness, messageFor, T0 } from './worker-harness';

const tracked = () => heldHandlers({ honourAbort: true });

const payload = z.object({ n: z.number(), acct: z.string() });
const specOf = (mode: 'skip' | 'queue' | 'cancel-running', type = 'echo', scope?: string) =>
  defineJobType({
    type,
    payload,
    timeoutMs: 1000,
    retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
    singleton: { key: (p) => p.acct, mode, ...(scope ? { scope } : {}) },
  });
const job = (id: string, acct = 'a1', type = 'echo') =>
  newJob({ id, type, payload: { n: 1, acct }, singletonKey: acct }, T0);

describe('singleton, mode queue', () => {
  it('runs one job of a key at a time; the next waits without polling, says why, and starts when the key frees', async () => {
    const g = tracked();
    const h = harness({ spec: specOf('queue') as JobTypeSpec, run: g.run as never });
    h.store.seed(job('a'));
    h.store.seed(job('b'));
    h.store.seed(job('other', 'a2'));
    const da = h.worker(sqsEvent(messageFor('a')));
    await g.until('a');
    expect(await h.worker(sqsEvent(messageFor('b')))).toEqual({ batchItemFailures: [] }); // deleted: no polling
    expect(h.store.peek('b')).toMatchObject({
      state: 'queued',
      waitingFor: { kind: 'singleton', key: 'a1', ticket: 0 },
    });
    // another key runs at once
    const dother = h.worker(sqsEvent(messageFor('other')));
    await g.until('other');
    g.release('other');
    await dother;
    g.release('a');
    await da;
    expect(h.queue.sent.map((s) => s.message.id)).toEqual(['b']); // handed the key, and woken
    const db = h.worker(sqsEvent(messageFor('b', { messageId: 'm-b-wake' })));
    await g.until('b');
    g.release('b');
    await db;
    expect(h.store.peek('b')?.state).toBe('succeeded');
    expect(g.started).toEqual(['a', 'other', 'b']);
    expect(await h.flow.state({ scope: '@echo', key: 'a1' })).toMatchObject({ holders: [], waiting: 0 });
  });
});

describe('singleton, mode skip', () => {
  it('ends a new job of a running key as skipped, naming the running job, without a ticket or a run', async () => {
    const g = tracked();
    const h = harness({ spec: specOf('skip') as JobTypeSpec, run: g.run as never });
    h.store.seed(job('a'));
    h.store.seed(job('b'));
    const da = h.worker(sqsEvent(messageFor('a')));
    await g.until('a');
    await h.worker(sqsEvent(messageFor('b')));
    const b = h.store.peek('b');
    expect(b).toMatchObject({ state: 'skipped', attempts: 0, skipReason: { kind: 'singleton', key: 'a1', by: 'a' } });
    expect(b?.waitingFor).toBeUndefined();
    expect(h.flow.writes.ticket ?? 0).toBe(0);
    // a duplicate of b's message finds it finished
    await h.worker(sqsEvent(messageFor('b', { messageId: 'm-b-dup' })));
    g.release('a');
    await da;
    expect(g.started).toEqual(['a']);
    // the key is free again: the next job runs
    h.store.seed(job('c'));
    const dc = h.worker(sqsEvent(messageFor('c')));
    await g.until('c');
    g.release('c');
    await dc;
    expect(h.store.peek('c')?.state).toBe('succeeded');
    expect(h.queue.sent).toEqual([]);
  });

  it("does not skip a retry of a job that ran: it waits for the key like a queued singleton's", async () => {
    const g = tracked();
    const h = harness({ spec: specOf('skip') as JobTypeSpec, run: g.run as never });
    h.store.seed(job('a'));
    h.store.seed(job('r', 'a1'));
    h.store.seed({ ...(h.store.peek('r') as ReturnType<typeof job>), state: 'retrying', attempts: 1, leaseToken: 1 });
    const da = h.worker(sqsEvent(messageFor('a')));
    await g.until('a');
    await h.worker(sqsEvent(messageFor('r')));
    expect(h.store.peek('r')).toMatchObject({ state: 'retrying', waitingFor: { kind: 'singleton', ticket: 0 } });
    g.release('a');
    await da;
    expect(h.queue.sent.map((s) => s.message.id)).toEqual(['r']);
  });

  it("does not skip an operator's retry of a held job: the run in flight waits for the key, its journal kept", async () => {
    // A held workflow (its replay diverged) that an operator retries after a fix is queued with
    // attempts 0, like a new run; skipped, it would end for good and release its dependants by
    // their policies, with the run it had recorded abandoned.
    const g = tracked();
    const h = harness({ spec: specOf('skip') as JobTypeSpec, run: g.run as never });
    h.store.seed(job('a'));
    const held = { ...job('h', 'a1'), state: 'held' as const, attempts: 1, leaseToken: 1 };
    h.store.seed(held);
    const restarted = await h.control.restart({ id: 'h', from: ['held'], now: T0 });
    expect(restarted).toMatchObject({ kind: 'applied', job: { state: 'queued', attempts: 0, retries: 1 } });
    const da = h.worker(sqsEvent(messageFor('a')));
    await g.until('a');
    await h.worker(sqsEvent(messageFor('h')));
    expect(h.store.peek('h')).toMatchObject({ state: 'queued', waitingFor: { kind: 'singleton', ticket: 0 } });
    g.release('a');
    await da;
    expect(h.queue.sent.map((s) => s.message.id)).toEqual(['h']);
  });
});

describe('singleton, mode cancel-running', () => {
  it('cancels the running job, whose handler is aborted, and starts the new one only once it has stopped', async () => {
    const g = tracked();
    // a short lease: the cancelled attempt's heartbeat (every 200 ms) notices the cancel soon
    const h = harness({ spec: specOf('cancel-running') as JobTypeSpec, run: g.run as never, leaseMs: 600 });
    h.store.seed(job('a'));
    h.store.seed(job('b'));
    const da = h.worker(sqsEvent(messageFor('a')));
    await g.until('a');
    await h.worker(sqsEvent(messageFor('b')));
    expect(h.store.peek('a')?.state).toBe('cancelled');
    expect(h.store.peek('b')).toMatchObject({ state: 'queued', waitingFor: { kind: 'singleton', key: 'a1' } });
    // a's worker finds its lease gone, aborts the handler, then gives the key back and wakes b
    await da;
    expect(h.store.peek('a')?.state).toBe('cancelled');
    expect(h.queue.sent.map((s) => s.message.id)).toEqual(['b']);
    const db = h.worker(sqsEvent(messageFor('b', { messageId: 'm-b-wake' })));
    await g.until('b');
    g.release('b');
    await db;
    expect(h.store.peek('b')?.state).toBe('succeeded');
    expect(g.peak).toBe(1);
    expect(await h.flow.state({ scope: '@echo', key: 'a1' })).toMatchObject({ holders: [], waiting: 0 });
  });

  it("never cancels a held job still named as the key's holder: only an operator moves it", async () => {
    // A job held for an operator (its replay diverged) whose worker died before it gave the key
    // back is still listed as its holder. The new job's cancel-running must not end it (that
    // would release its dependants by their policies and run no operator's choice): the line
    // keeper frees the place of a holder that is held, as of one that finished.
    const g = tracked();
    const h = harness({ spec: specOf('cancel-running') as JobTypeSpec, run: g.run as never });
    const spec = specOf('cancel-running') as JobTypeSpec;
    const held = { ...job('h'), state: 'held' as const, attempts: 1, leaseToken: 1 };
    h.store.seed(held);
    const [slot] = jobSlots(spec, held);
    expect(await h.flow.acquire({ slot: slot as Slot, jobId: 'h', type: 'echo', now: T0, token: 1 })).toMatchObject({
      kind: 'held',
    });
    h.store.seed(job('b'));
    await h.worker(sqsEvent(messageFor('b')));
    expect(h.store.peek('h')).toMatchObject({ state: 'held' });
    expect(h.store.peek('h')?.controls).toBeUndefined();
    // its place was freed and handed to b
    expect((await h.flow.state({ scope: '@echo', key: 'a1' })).holders.map((x) => x.jobId)).not.toContain('h');
  });
});

describe('a singleton scope shared by two job types', () => {
  it('never runs a job of one type beside a job of the other with the same key, and hands the key across types', async () => {
    const store = new FakeJobStore();
    const queue = new FakeJobQueue();
    const flow = new FakeFlowSlots();
    const clock = new ManualClock(T0);
    const config = testConfig(['report', 'export']);
    const g = tracked();
    const logger = createLogger({ level: 'silent' });
    const worker = (type: string) =>
      createWorker(
        { spec: specOf('queue', type, 'account-io') as JobTypeSpec, run: g.run as never },
        { config, store, queue, flow, clock, logger, control: new FakeJobControl(store), owner: `w-${type}` },
      );
    const report = worker('report');
    const exporter = worker('export');
    store.seed(job('r1', 'a1', 'report'));
    store.seed(job('e1', 'a1', 'export'));
    store.seed(job('e2', 'a2', 'export'));
    const dr = report(sqsEvent(messageFor('r1', { type: 'report' })));
    await g.until('r1');
    await exporter(sqsEvent(messageFor('e1', { type: 'export' })));
    expect(store.peek('e1')).toMatchObject({ state: 'queued', waitingFor: { kind: 'singleton', key: 'a1' } });
    // another key of the scope is free
    const de2 = exporter(sqsEvent(messageFor('e2', { type: 'export' })));
    await g.until('e2');
    g.release('e2');
    await de2;
    g.release('r1');
    await dr;
    // report's worker handed the key to the export job and sent it to export's queue
    expect(queue.sent).toMatchObject([
      { queueUrl: config.routes.export?.queueUrl, message: { id: 'e1', type: 'export' } },
    ]);
    const de1 = exporter(sqsEvent(messageFor('e1', { type: 'export', messageId: 'm-e1-wake' })));
    await g.until('e1');
    g.release('e1');
    await de1;
    expect(store.peek('e1')?.state).toBe('succeeded');
    expect(g.peak).toBe(2); // r1 beside e2 (other key), never r1 beside e1
    expect(g.started).toEqual(['r1', 'e2', 'e1']);
  });
});

describe('singleton declarations', () => {
  it('refuses a bad mode, key or scope when the type is declared', () => {
    const bad = (singleton: unknown) => () => defineJobType({ type: 'echo', payload, singleton: singleton as never });
    expect(bad({ mode: 'drop' })).toThrow(/singleton.mode must be one of skip, queue, cancel-running/);
    expect(bad({ mode: 'skip', key: 'acct' })).toThrow(/singleton.key must be a function/);
    expect(bad({ mode: 'skip', scope: 'Bad Scope' })).toThrow(/singleton.scope must match/);
    expect(bad(null)).toThrow(/singleton must be an object/);
    expect(echoJob('x').singletonKey).toBeUndefined();
  });
});
