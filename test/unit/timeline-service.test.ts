/**
 * `GET /jobs/{id}/timeline`'s service on the in-memory fakes (they pass the adapters' contract
 * suites): attempts from the job item, entries in the order they were recorded, each in the
 * attempt whose window holds it; a step's start taken from what ended before it; a wait's deadline
 * and outcome as one entry (its payload read from the inbox when the send recorded it); invokes
 * with their child, and left out for a type the caller may not read; nothing written.
 */
import { describe, expect, it } from 'vitest';
import { attemptsOf, preview, TimelineService } from '../../shared/api/timeline-service';
import type { Job } from '../../shared/core/job';
import type { JournalKind } from '../../shared/core/journal';
import { incarnationOf } from '../../shared/core/table';
import { NotFoundError, ValidationError } from '../../shared/errors';
import { FakeJobStore, newJob } from '../support/fakes';
import { FakeJournal } from '../support/journal-fake';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

async function setup(job: Partial<Job> = {}) {
  const store = new FakeJobStore();
  const journal = new FakeJournal();
  const parent = newJob(
    {
      id: 'order-1',
      type: 'order',
      state: 'succeeded',
      attempts: 2,
      startedAt: iso(T0 + 5_000),
      finishedAt: iso(T0 + 9_000),
      errors: [{ attempt: 1, at: iso(T0 + 2_500), reason: 'error', name: 'Error', message: 'declined' }],
      ...job,
    },
    T0,
  );
  store.seed(parent);
  const scope = { jobId: parent.id, incarnation: incarnationOf(parent.createdAt) };
  const record = (kind: JournalKind, name: string, value: unknown, at: number) =>
    journal.record({ ...scope, kind, name, value, at, expiresAt: T0 / 1000 + 86_400 });
  // attempt 1 (failed at +2.5 s): load
  await record('step', 'load', { lines: [1, 2, 3] }, T0 + 1_000);
  // attempt 2 (its last start +5 s): charge, a sleep, a signal the send recorded, an invoke, ship
  await record('step', 'charge', 'x'.repeat(300), T0 + 3_000);
  await record('sleep', 'cool', T0 + 4_000, T0 + 3_100);
  await record('wait', 'approve', T0 + 60_000, T0 + 5_100);
  await record('signal', 'approve', { received: iso(T0 + 6_000) }, T0 + 6_000);
  await journal.deliver({
    ...scope,
    name: 'approve',
    signal: { payload: { by: 'ops' }, payloadHash: 'h', at: iso(T0 + 6_000) },
    expiresAt: T0 / 1000 + 86_400,
  });
  await record('signal', 'event:paid', { payload: { id: 'ev1' } }, T0 + 6_100);
  await record('invoke', 'child', { id: 'order-1.child', index: 0 }, T0 + 6_200);
  await record('invoked', 'child', { state: 'succeeded', result: 2 }, T0 + 7_000);
  await record('step', 'ship', true, T0 + 7_500);
  store.seed(newJob({ id: 'order-1.child', type: 'secret', state: 'succeeded' }, T0));
  return { store, journal, service: new TimelineService({ store, journal, clock: { now: () => T0 + 10_000 } }) };
}

describe('TimelineService', () => {
  it('gives the attempts and, in order, each step, sleep, wait and invoke in its attempt; writes nothing', async () => {
    const { service, store, journal } = await setup();
    const storeCalls = store.calls.length;
    const journalWrites = journal.calls.filter((c) => c.method === 'record' || c.method === 'deliver').length;
    const page = await service.read('order-1', { kind: 'all' });
    expect(page.attempts).toEqual([
      {
        attempt: 1,
        startedAt: null,
        endedAt: iso(T0 + 2_500),
        outcome: 'failed',
        error: { reason: 'error', name: 'Error', message: 'declined' },
      },
      { attempt: 2, startedAt: iso(T0 + 5_000), endedAt: iso(T0 + 9_000), outcome: 'succeeded' },
    ]);
    expect(page.entries).toEqual([
      {
        kind: 'step',
        name: 'load',
        attempt: 0,
        at: iso(T0 + 1_000),
        startedAt: null,
        durationMs: null,
        bytes: 17,
        preview: '{"lines":[1,2,3]}',
      },
      {
        kind: 'step',
        name: 'charge',
        attempt: 1,
        at: iso(T0 + 3_000),
        // the attempt's known start (+5 s) is its last claim, after this entry: no start known
        startedAt: null,
        durationMs: null,
        bytes: 302,
        preview: `"${'x'.repeat(119)}…`,
      },
      { kind: 'sleep', name: 'cool', attempt: 1, at: iso(T0 + 3_100), until: iso(T0 + 4_000), woke: true },
      {
        kind: 'wait',
        name: 'approve',
        event: false,
        attempt: 1,
        at: iso(T0 + 5_100),
        until: iso(T0 + 60_000),
        endedAt: iso(T0 + 6_000),
        wokenBy: 'signal',
        preview: '{"by":"ops"}',
      },
      {
        kind: 'wait',
        name: 'event:paid',
        event: true,
        attempt: 1,
        at: iso(T0 + 6_100),
        until: null,
        endedAt: iso(T0 + 6_100),
        wokenBy: 'event',
        preview: '{"id":"ev1"}',
      },
      {
        kind: 'invoke',
        name: 'child',
        attempt: 1,
        at: iso(T0 + 6_200),
        child: { id: 'order-1.child', type: 'secret', state: 'succeeded' },
        endedAt: iso(T0 + 7_000),
        outcome: 'succeeded',
      },
      {
        kind: 'step',
        name: 'ship',
        attempt: 1,
        at: iso(T0 + 7_500),
        // it started when the invoke before it ended
        startedAt: iso(T0 + 7_000),
        durationMs: 500,
        bytes: 4,
        preview: 'true',
      },
    ]);
    expect(page).toMatchObject({ id: 'order-1', type: 'order', state: 'succeeded', series: null, nextCursor: null });
    // reads only: the job, the child, the journal and one inbox signal
    expect(store.calls.slice(storeCalls).map((c) => c.method)).toEqual(['get', 'get']);
    expect(journal.calls.filter((c) => c.method === 'record' || c.method === 'deliver')).toHaveLength(journalWrites);
    expect(journal.calls.filter((c) => c.method === 'load' || c.method === 'signal').map((c) => c.method)).toEqual([
      'load',
      'signal',
    ]);
  });

  it('leaves out an invoke of a type the caller may not read', async () => {
    const { service } = await setup();
    const page = await service.read('order-1', { kind: 'some', types: new Set(['order']) });
    expect(page.entries.map((e) => e.name)).toEqual(['load', 'charge', 'cool', 'approve', 'event:paid', 'ship']);
  });

  it('is a 404 for an unknown or expired job and a 400 for a bad cursor', async () => {
    const { service } = await setup({ expiresAt: T0 / 1000 + 5 });
    await expect(service.read('order-1', { kind: 'all' })).rejects.toBeInstanceOf(NotFoundError);
    await expect(service.read('nope', { kind: 'all' })).rejects.toBeInstanceOf(NotFoundError);
    await expect(service.read('bad id!', { kind: 'all' })).rejects.toBeInstanceOf(NotFoundError);
    const ok = await setup();
    await expect(ok.service.read('order-1', { kind: 'all' }, 'x1')).rejects.toBeInstanceOf(ValidationError);
    expect((await ok.service.read('order-1', { kind: 'all' }, '6')).entries.map((e) => e.name)).toEqual(['ship']);
  });
});

describe('TimelineService: entries of one millisecond', () => {
  it('are in the order the run made them (their marks), not the order of their names', async () => {
    const store = new FakeJobStore();
    const journal = new FakeJournal();
    const job = newJob({ id: 'tie-1', type: 'order', state: 'succeeded', startedAt: iso(T0) }, T0);
    store.seed(job);
    const scope = { jobId: job.id, incarnation: incarnationOf(job.createdAt) };
    // `zip` made first, `apply` second (racing in a Promise.all), both recorded in the same
    // millisecond, `apply` written first: neither the names nor the writes give the run's order
    for (const [name, seq] of [
      ['apply', 1],
      ['zip', 0],
    ] as const) {
      await journal.record({
        ...scope,
        kind: 'step',
        name,
        value: seq,
        at: T0 + 5,
        expiresAt: T0 / 1000 + 86_400,
        mark: { seq, version: 'v1' },
      });
    }
    const service = new TimelineService({ store, journal, clock: { now: () => T0 + 10_000 } });
    const page = await service.read('tie-1', { kind: 'all' });
    expect(page.entries.map((e) => e.name)).toEqual(['zip', 'apply']);
  });
});

describe('attemptsOf', () => {
  const failed = { attempt: 1, at: iso(T0 + 1_000), reason: 'error', name: 'Error', message: 'boom' };
  it('a waiting job is in the attempt it resumes (the wait gave its count back)', () => {
    const attempts = attemptsOf({ state: 'waiting', attempts: 0, errors: [], startedAt: iso(T0) });
    expect(attempts).toEqual([{ attempt: 1, startedAt: iso(T0), endedAt: null, outcome: 'waiting' }]);
  });
  it('a failed or retrying job’s last attempt is the last failed one', () => {
    for (const state of ['failed', 'retrying'] as const) {
      const attempts = attemptsOf({ state, attempts: 1, errors: [failed], startedAt: iso(T0) });
      expect(attempts).toEqual([{ ...attemptsOf({ state, attempts: 1, errors: [failed] })[0], startedAt: iso(T0) }]);
      expect(attempts).toHaveLength(1);
    }
  });
  it('a job not started since its retry has only its failed attempts; a queued new job none', () => {
    expect(
      attemptsOf({
        state: 'queued',
        attempts: 0,
        errors: [failed],
        controls: [{ action: 'retry', by: 'ops', at: iso(T0 + 2_000) }],
      }).map((a) => a.outcome),
    ).toEqual(['failed']);
    expect(attemptsOf({ state: 'queued', attempts: 0, errors: [] })).toEqual([]);
  });
  it('cuts a preview at 120 characters', () => {
    expect(preview(null)).toBe('null');
    expect(preview('a'.repeat(200))).toHaveLength(121);
  });
});
