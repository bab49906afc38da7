/**
 * Rerun from a step (`POST /jobs/{id}/rerun`, docs/workflows.md "Rerun from a step") on the
 * in-memory ports: where a journal is cut, what the API refuses without writing anything, what
 * it writes when it accepts (a new journal series holding copies of the kept entries, the job
 * queued again with `reruns` + 1 and the corrected payload), and how a rerun's run starts new
 * invokes (new child ids, edge indexes above every one the cut journal used).
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { allowEveryone } from '../../shared/api/access';
import { createApiHandler } from '../../shared/api/handler';
import { SignalsService } from '../../shared/api/signals-service';
import { ManualClock } from '../../shared/core/clock';
import { invokedChildId } from '../../shared/core/invoke';
import type { Job } from '../../shared/core/job';
import { defineJobType, type JobTypeSpec } from '../../shared/core/job-type';
import {
  cutJournal,
  entryName,
  type JournalEntry,
  type JournalKind,
  journalScopeOf,
  RERUN_MARKER,
} from '../../shared/core/journal';
import { createLogger } from '../../shared/logger';
import { createWorkflow, Suspension } from '../../shared/runtime/workflow';
import { FakeJobControl } from '../support/control-fakes';
import { captureLogs, FakeJobQueue, FakeJobScheduler, FakeJobStore, newJob, testConfig } from '../support/fakes';
import { FakeJournal } from '../support/journal-fake';

const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

const entries = (list: [JournalKind, string, number, unknown?][]) =>
  new Map<string, JournalEntry>(
    list.map(([kind, name, at, value]) => [entryName(kind, name), { value: value ?? null, at: iso(at) }]),
  );

describe('cutJournal: where a rerun cuts the journal', () => {
  const journal = entries([
    ['step', 'one', T0 + 1],
    ['step', 'two', T0 + 2],
    ['sleep', 'nap', T0 + 3, T0 + 60_000],
    ['step', 'three', T0 + 4],
    ['step', 'four', T0 + 5],
  ]);

  it('keeps the entries recorded before the named one, oldest first, and drops it and every later one', () => {
    const cut = cutJournal(journal, 'three');
    expect(cut?.kept.map((e) => `${e.kind}#${e.name}`)).toEqual(['step#one', 'step#two', 'sleep#nap']);
    expect(cut?.dropped).toBe(2);
  });

  it('finds a sleep (or a wait, an invoke) by its name as well as a step', () => {
    expect(cutJournal(journal, 'nap')?.kept.map((e) => e.name)).toEqual(['one', 'two']);
  });

  it('cuts at the step of the name when a sleep, wait or invoke recorded before it shares the name', () => {
    // names are unique per kind: `ctx.sleep('notify')` then `ctx.step('notify')` is a valid run, and
    // the dashboard's "Rerun from here" on the step sends its name; `charge` must not run again
    const shared = entries([
      ['sleep', 'notify', T0 + 1, T0 + 60_000],
      ['step', 'charge', T0 + 2],
      ['step', 'notify', T0 + 3],
    ]);
    const cut = cutJournal(shared, 'notify');
    expect(cut?.kept.map((e) => `${e.kind}#${e.name}`)).toEqual(['sleep#notify', 'step#charge']);
    expect(cut?.dropped).toBe(1);
  });

  it('keeps nothing without a step (from the start), and answers undefined for a name no entry has', () => {
    expect(cutJournal(journal)).toEqual({ kept: [], dropped: 5, nextInvokeIndex: 0 });
    expect(cutJournal(journal, 'five')).toBeUndefined();
    expect(cutJournal(new Map(), 'one')).toBeUndefined();
  });

  it('drops an entry recorded in the same millisecond as the cut entry (it may depend on it)', () => {
    const tie = entries([
      ['step', 'a', T0],
      ['step', 'b', T0 + 7],
      ['step', 'c', T0 + 7],
    ]);
    expect(cutJournal(tie, 'c')?.kept.map((e) => e.name)).toEqual(['a']);
  });

  it('counts the invoke indexes of the whole journal, dropped ones and an earlier rerun marker included', () => {
    const withInvokes = entries([
      ['invoke', 'first', T0 + 1, { id: 'p.first', index: 0 }],
      ['step', 'mid', T0 + 2],
      ['invoke', 'second', T0 + 3, { id: 'p.second', index: 1 }],
      ['rerun', RERUN_MARKER, T0, { nextInvokeIndex: 7 }],
    ]);
    const cut = cutJournal(withInvokes, 'mid');
    expect(cut?.kept.map((e) => e.name)).toEqual(['first']);
    expect(cut?.nextInvokeIndex).toBe(7);
    // a marker is never kept as an entry, nor counted as dropped, nor a step to cut at
    expect(cut?.dropped).toBe(2);
    expect(cutJournal(withInvokes, RERUN_MARKER)).toBeUndefined();
  });
});

const catalog = [
  defineJobType({
    type: 'order',
    payload: z.object({ customer: z.string(), total: z.number() }),
    concurrency: [{ limit: 2, key: (p: { customer: string }) => p.customer }],
  }),
];

function setup(types: readonly JobTypeSpec[] = catalog) {
  const config = testConfig(types.map((t) => t.type));
  const store = new FakeJobStore();
  const queue = new FakeJobQueue();
  const journal = new FakeJournal();
  const clock = new ManualClock(T0);
  const logs = captureLogs();
  const api = createApiHandler({
    access: allowEveryone(),
    config,
    catalog: types,
    store,
    queue,
    scheduler: new FakeJobScheduler(),
    clock,
    journal,
    logger: createLogger({ level: 'debug', sink: logs.sink }),
    controlPlane: {
      index: { query: async () => ({ entries: [], more: false }) },
      control: new FakeJobControl(store),
      deadLetters: {} as never,
      redrives: {} as never,
    },
  });
  const call = async (path: string, body?: unknown) => {
    const response = await api({
      version: '2.0',
      routeKey: '$default',
      rawPath: path,
      rawQueryString: '',
      headers: { 'content-type': 'application/json' },
      requestContext: { http: { method: 'POST', path }, requestId: 'req-1' },
      isBase64Encoded: false,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    } as unknown as APIGatewayProxyEventV2);
    return { status: response.statusCode, body: JSON.parse(response.body ?? 'null') };
  };
  /** A job of type `order` in `state`, with a journal of steps `one`..`four` recorded 1 ms apart. */
  const seed = async (id: string, overrides: Partial<Job> = {}) => {
    const job = newJob(
      {
        id,
        type: 'order',
        payload: { customer: 'c-1', total: 10 },
        flowKeys: ['c-1'],
        attempts: 3,
        maxAttempts: 3,
        state: 'failed',
        finishedAt: iso(T0 - 1000),
        expiresAt: Math.floor(T0 / 1000) + 86_400,
        ...overrides,
      },
      T0 - 60_000,
    );
    store.seed(job);
    const scope = journalScopeOf(job);
    for (const [i, name] of ['one', 'two', 'three', 'four'].entries()) {
      await journal.record({
        ...scope,
        kind: 'step',
        name,
        value: { step: name },
        at: T0 - 50_000 + i,
        expiresAt: Math.floor(T0 / 1000) + 86_400,
      });
    }
    return job;
  };
  const records = () => journal.calls.filter((c) => c.method === 'record').length;
  return { call, store, queue, journal, clock, seed, records, logs: logs.lines };
}

describe('POST /jobs/{id}/rerun: refusals write nothing', () => {
  it('answers 400 unknown_step naming fromStep for a step the journal does not hold', async () => {
    const h = setup();
    const before = await h.seed('o-1');
    const recorded = h.records();
    const response = await h.call('/jobs/o-1/rerun', { fromStep: 'five' });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'unknown_step', issues: [{ path: 'fromStep' }] });
    expect(h.records()).toBe(recorded);
    expect(h.store.peek('o-1')).toEqual(before);
    expect(h.queue.sent).toHaveLength(0);
  });

  it('answers 400 invalid_payload naming the field, and keys_changed for a payload with other flow keys', async () => {
    const h = setup();
    const before = await h.seed('o-2');
    const recorded = h.records();
    const bad = await h.call('/jobs/o-2/rerun', { fromStep: 'three', payload: { customer: 'c-1', total: 'ten' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_payload', issues: [{ path: 'payload.total' }] });
    const moved = await h.call('/jobs/o-2/rerun', { fromStep: 'three', payload: { customer: 'c-2', total: 10 } });
    expect(moved.status).toBe(400);
    expect(moved.body.error).toMatchObject({ code: 'keys_changed', issues: [{ path: 'payload' }] });
    const unknownField = await h.call('/jobs/o-2/rerun', { from: 'three' });
    expect(unknownField.status).toBe(400);
    expect(h.records()).toBe(recorded);
    expect(h.store.peek('o-2')).toEqual(before);
    expect(h.queue.sent).toHaveLength(0);
  });

  it('answers 400 for a corrected payload that is not a JSON object, as an enqueue does, whatever the schema', async () => {
    const loose = defineJobType({ type: 'order', payload: z.unknown() });
    const h = setup([loose]);
    const before = await h.seed('o-11');
    const recorded = h.records();
    for (const payload of ['text', [1, 2], 7, null]) {
      const response = await h.call('/jobs/o-11/rerun', { fromStep: 'three', payload });
      expect(response.status).toBe(400);
      expect(response.body.error).toMatchObject({ code: 'validation_failed', issues: [{ path: 'payload' }] });
    }
    expect(h.records()).toBe(recorded);
    expect(h.store.peek('o-11')).toEqual(before);
    expect(h.queue.sent).toHaveLength(0);
  });

  it('answers 409 illegal_state for a job that may still run (running, queued, waiting), and 404 for none', async () => {
    const h = setup();
    for (const state of ['running', 'queued', 'waiting', 'retrying'] as const) {
      const before = await h.seed(`live-${state}`, { state, finishedAt: undefined, expiresAt: undefined });
      const recorded = h.records();
      const response = await h.call(`/jobs/live-${state}/rerun`, { fromStep: 'three' });
      expect(response.status).toBe(409);
      expect(response.body.error).toMatchObject({ code: 'illegal_state' });
      expect(h.records()).toBe(recorded);
      expect(h.store.peek(`live-${state}`)).toEqual(before);
    }
    expect((await h.call('/jobs/nobody/rerun', {})).status).toBe(404);
    expect(h.queue.sent).toHaveLength(0);
  });
});

describe('POST /jobs/{id}/rerun: an accepted rerun', () => {
  it('copies the kept entries into a new series, queues the same job with the corrected payload, and sends it', async () => {
    const h = setup();
    const before = await h.seed('o-3');
    const response = await h.call('/jobs/o-3/rerun', { fromStep: 'three', payload: { customer: 'c-1', total: 12 } });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      id: 'o-3',
      state: 'queued',
      attempts: 0,
      retries: 1,
      reruns: 1,
      payload: { customer: 'c-1', total: 12 },
      createdAt: before.createdAt,
    });
    const job = h.store.peek('o-3') as Job;
    expect(job.journal).toMatch(/^r1\./);
    expect(job.payloadHash).not.toBe(before.payloadHash);
    // the new series holds steps one and two, as recorded; the old one is left as it was
    const kept = await h.journal.load(journalScopeOf(job));
    expect([...kept.keys()].sort()).toEqual(['step#one', 'step#two']);
    expect(kept.get('step#two')).toEqual({ value: { step: 'two' }, at: iso(T0 - 50_000 + 1) });
    expect((await h.journal.load(journalScopeOf(before))).size).toBe(4);
    expect(h.queue.sent.map((m) => m.message.id)).toEqual(['o-3']);
  });

  it('reruns a succeeded job from the start (nothing kept), keeping its payload', async () => {
    const h = setup();
    await h.seed('o-4', { state: 'succeeded', result: { ok: true } });
    const response = await h.call('/jobs/o-4/rerun');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      state: 'queued',
      reruns: 1,
      result: null,
      payload: { customer: 'c-1', total: 10 },
    });
    const job = h.store.peek('o-4') as Job;
    expect((await h.journal.load(journalScopeOf(job))).size).toBe(0);
  });

  it('a second rerun cuts the series the first one started, not the original journal', async () => {
    const h = setup();
    await h.seed('o-5');
    expect((await h.call('/jobs/o-5/rerun', { fromStep: 'three' })).status).toBe(200);
    // the rerun's run ends (failed again) without reaching step three
    const first = h.store.peek('o-5') as Job;
    h.store.seed({ ...first, state: 'failed', finishedAt: iso(T0 + 1) });
    h.clock.advance(1000);
    // step three is in the original journal only: the current series does not hold it
    const refused = await h.call('/jobs/o-5/rerun', { fromStep: 'three' });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('unknown_step');
    const second = await h.call('/jobs/o-5/rerun', { fromStep: 'two' });
    expect(second.status).toBe(200);
    const job = h.store.peek('o-5') as Job;
    expect(job.reruns).toBe(2);
    expect(job.journal).not.toBe(first.journal);
    expect([...(await h.journal.load(journalScopeOf(job))).keys()]).toEqual(['step#one']);
  });

  it('writes a marker with the next invoke index when it drops invokes beyond the kept ones', async () => {
    const h = setup();
    const job = await h.seed('o-7');
    const scope = journalScopeOf(job);
    const ttl = Math.floor(T0 / 1000) + 86_400;
    await h.journal.record({
      ...scope,
      kind: 'invoke',
      name: 'a',
      value: { id: 'o-7.a', index: 0 },
      at: T0 - 40_000,
      expiresAt: ttl,
    });
    await h.journal.record({ ...scope, kind: 'step', name: 'mid', value: 1, at: T0 - 30_000, expiresAt: ttl });
    await h.journal.record({
      ...scope,
      kind: 'invoke',
      name: 'b',
      value: { id: 'o-7.b', index: 1 },
      at: T0 - 20_000,
      expiresAt: ttl,
    });
    expect((await h.call('/jobs/o-7/rerun', { fromStep: 'mid' })).status).toBe(200);
    const series = await h.journal.load(journalScopeOf(h.store.peek('o-7') as Job));
    expect(series.get('invoke#a')?.value).toEqual({ id: 'o-7.a', index: 0 });
    expect(series.has('invoke#b')).toBe(false);
    expect(series.get(`rerun#${RERUN_MARKER}`)?.value).toEqual({ nextInvokeIndex: 2 });
    // a rerun from after the last invoke keeps every invoke: no marker
    const h2 = setup();
    const other = await h2.seed('o-8');
    await h2.journal.record({
      ...journalScopeOf(other),
      kind: 'invoke',
      name: 'a',
      value: { id: 'o-8.a', index: 0 },
      at: T0 - 60_000,
      expiresAt: ttl,
    });
    expect((await h2.call('/jobs/o-8/rerun', { fromStep: 'four' })).status).toBe(200);
    expect((await h2.journal.load(journalScopeOf(h2.store.peek('o-8') as Job))).has(`rerun#${RERUN_MARKER}`)).toBe(
      false,
    );
  });

  it('a rerun that lost the race to another rerun or retry of the job answers 409 and starts nothing', async () => {
    const h = setup();
    const seen = await h.seed('o-6');
    // what a concurrent rerun did between this one's read and its write: the job runs on another series
    const control = new FakeJobControl(h.store);
    const other = await control.restart({
      id: 'o-6',
      from: ['failed'],
      now: T0,
      rerun: { seen, journal: 'r1.other' },
    });
    expect(other.kind).toBe('applied');
    const late = await control.restart({
      id: 'o-6',
      from: ['failed', 'queued'],
      now: T0 + 1,
      rerun: { seen, journal: 'r1.late' },
    });
    expect(late.kind).toBe('refused');
    expect(h.store.peek('o-6')?.journal).toBe('r1.other');
  });

  it('of two reruns made in the same millisecond, one starts the job and the other answers 409', async () => {
    const h = setup();
    await h.seed('o-9');
    // the clock does not move between them: the loser's refused write looks like the winner's
    const [a, b] = await Promise.all([
      h.call('/jobs/o-9/rerun', { fromStep: 'three', payload: { customer: 'c-1', total: 11 } }),
      h.call('/jobs/o-9/rerun', { fromStep: 'two', payload: { customer: 'c-1', total: 22 } }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const [won, lost] = a.status === 200 ? [a, b] : [b, a];
    // the job it read is queued now: illegal_state (job_changed when it is rerunnable again)
    expect(['illegal_state', 'job_changed']).toContain(lost.body.error.code);
    // what the winner answered is what runs: its payload, and the series it wrote
    const job = h.store.peek('o-9') as Job;
    expect(job.payload).toEqual(won.body.payload);
    expect(h.queue.sent.map((m) => m.message.id)).toEqual(['o-9']);
  });

  it('a rerun that lost to a retry in the same millisecond answers 409, not 200', async () => {
    const h = setup();
    const seen = await h.seed('o-10');
    const control = new FakeJobControl(h.store);
    expect((await control.restart({ id: 'o-10', from: ['failed'], now: T0 })).kind).toBe('applied');
    const late = await control.restart({
      id: 'o-10',
      from: ['failed'],
      now: T0,
      rerun: { seen, journal: 'r1.late', payload: { value: { customer: 'c-1', total: 99 }, hash: 'h' } },
    });
    expect(late.kind).toBe('refused');
    expect(h.store.peek('o-10')?.journal).toBeUndefined();
  });
});

describe('a rerun run starts what it dropped anew', () => {
  it('an invoke the rerun dropped starts a new child (`.r<n>`), at an edge index above every one used before', async () => {
    const journal = new FakeJournal();
    const createdAt = iso(T0);
    const job = { id: 'parent', createdAt, attempts: 1, retries: 1, reruns: 2, journal: 'r2.x' };
    await journal.record({
      ...journalScopeOf(job),
      kind: 'rerun',
      name: RERUN_MARKER,
      value: { nextInvokeIndex: 4 },
      at: T0,
      expiresAt: Math.floor(T0 / 1000) + 86_400,
    });
    const started: { id: string; index: number }[] = [];
    const workflow = createWorkflow({
      job,
      journal,
      clock: new ManualClock(T0),
      signal: new AbortController().signal,
      expiresAt: () => Math.floor(T0 / 1000) + 86_400,
      invoker: {
        start: async (child) => {
          started.push({ id: child.id, index: child.index });
        },
        look: async () => undefined,
      },
    });
    await expect(workflow.invoke('charge', 'charge-card', {})).rejects.toBeInstanceOf(Suspension);
    expect(started).toEqual([{ id: 'parent.charge.r2', index: 4 }]);
    expect(invokedChildId('parent', 'charge')).toBe('parent.charge');
    expect(invokedChildId('parent', 'charge', 2)).toBe('parent.charge.r2');
    expect(invokedChildId('p'.repeat(60), 'charge', 1)).toMatch(/^inv\.[0-9a-f]{40}$/);
    expect(invokedChildId('p'.repeat(60), 'charge', 1)).not.toBe(invokedChildId('p'.repeat(60), 'charge'));
  });

  it("a step's record goes to the job's current series, and a late write to the old one is never read", async () => {
    const journal = new FakeJournal();
    const createdAt = iso(T0);
    const old = { id: 'j', createdAt };
    const rerun = { id: 'j', createdAt, attempts: 1, retries: 1, reruns: 1, journal: 'r1.y' };
    const workflow = createWorkflow({
      job: rerun,
      journal,
      clock: new ManualClock(T0),
      signal: new AbortController().signal,
      expiresAt: () => Math.floor(T0 / 1000) + 86_400,
    });
    // the old attempt, still running, records its step into the journal it read: the old series
    await journal.record({
      ...journalScopeOf(old),
      kind: 'step',
      name: 'charge',
      value: 'old',
      at: T0,
      expiresAt: Math.floor(T0 / 1000) + 86_400,
    });
    let ran = 0;
    const value = await workflow.step('charge', () => {
      ran++;
      return 'new';
    });
    expect({ value, ran }).toEqual({ value: 'new', ran: 1 });
    expect((await journal.load(journalScopeOf(rerun))).get('step#charge')?.value).toBe('new');
  });

  it("a signal sent to a rerun job records the wait's outcome in the series the job runs on", async () => {
    const store = new FakeJobStore();
    const journal = new FakeJournal();
    const job = newJob(
      {
        id: 'w-1',
        type: 'order',
        state: 'waiting',
        waitSignal: 'payment',
        journal: 'r1.s',
        reruns: 1,
        retries: 1,
        waitingFor: { kind: 'signal', key: 'payment', until: iso(T0 + 3_600_000), since: iso(T0) },
      },
      T0 - 60_000,
    );
    store.seed(job);
    const signals = new SignalsService({
      config: testConfig(['order']),
      catalog,
      store,
      journal,
      queue: new FakeJobQueue(),
      clock: new ManualClock(T0),
      log: createLogger({ level: 'error' }),
    });
    const { receipt } = await signals.send('w-1', 'payment', { payload: { amount: 3 } });
    expect(receipt).toMatchObject({ resumed: true, late: false });
    const scope = journalScopeOf(job);
    expect(scope.series).toBe('r1.s');
    expect(await journal.get({ ...scope, kind: 'signal', name: 'payment' })).toMatchObject({
      value: { received: expect.any(String) },
    });
    // the first series (the journal before the rerun) got nothing
    expect(
      await journal.get({ jobId: 'w-1', incarnation: scope.incarnation, kind: 'signal', name: 'payment' }),
    ).toBeUndefined();
  });
});

describe('a corrected payload of a job enqueued with its own concurrency or singleton key', () => {
  const regional = defineJobType({
    type: 'order',
    payload: z.object({ customer: z.string(), total: z.number(), region: z.string().optional() }),
    concurrency: [{ limit: 2, key: (p: { region?: string }) => p.region as string }],
  });

  it('is checked against the key the job was given (concurrencyKey), not one its payload cannot give', async () => {
    const h = setup([regional]);
    // enqueued with concurrencyKey 'eu': the payload names no region, the job's key is the one given
    await h.seed('o-12', { flowKeys: ['eu'] });
    const same = await h.call('/jobs/o-12/rerun', { fromStep: 'three', payload: { customer: 'c-1', total: 12 } });
    expect(same.status).toBe(200);
    expect(h.store.peek('o-12')).toMatchObject({ flowKeys: ['eu'], payload: { customer: 'c-1', total: 12 } });
  });

  it('still refuses a payload whose key the job took from its payload changes', async () => {
    const h = setup([regional]);
    await h.seed('o-13', { flowKeys: ['eu'], payload: { customer: 'c-1', total: 10, region: 'eu' } });
    const moved = await h.call('/jobs/o-13/rerun', { payload: { customer: 'c-1', total: 10, region: 'us' } });
    expect(moved.status).toBe(400);
    expect(moved.body.error).toMatchObject({ code: 'keys_changed', issues: [{ path: 'payload' }] });
    const lost = await h.call('/jobs/o-13/rerun', { payload: { customer: 'c-1', total: 10 } });
    expect(lost.status).toBe(400);
    expect(h.store.peek('o-13')?.state).toBe('failed');
  });
});

describe('POST /jobs/{id}/rerun and payload references', () => {
  const loose = defineJobType({ type: 'loose', payload: z.looseObject({}) });

  it("never keeps a corrected payload shaped like a reference as one (it would read another job's object)", async () => {
    const h = setup([...catalog, loose]);
    await h.seed('o-21', { type: 'loose', payload: { a: 1 }, flowKeys: [] });
    const lookalike = { $orreryBlob: 1, key: 'p/someone-else/secret', bytes: 1 };
    const response = await h.call('/jobs/o-21/rerun', { fromStep: 'three', payload: lookalike });
    // a rerun's payload is kept inline (not offloaded): one of this shape is refused, nothing written
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'invalid_payload', issues: [{ path: 'payload' }] });
    expect(h.store.peek('o-21')?.payload).toEqual({ a: 1 });
  });
});
