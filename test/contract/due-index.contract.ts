/**
 * The contract of the supervisor's {@link DueIndex} where it meets the other items that carry a
 * due entry: a job's status item and a signal's inbox item (`Journal.deliver` with a `dueAt`).
 * Run against the in-memory fakes (test/unit/contract-fakes.test.ts) and the DynamoDB adapters
 * on DynamoDB Local (test/integration/contract-adapters.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { dueBucket } from '../../shared/core/due';
import type { DueIndex, DueKey } from '../../shared/core/due-index';
import { inboxKey, inboxOf, type Journal, journalKey } from '../../shared/core/journal';
import type { JobStore } from '../../shared/core/ports';
import { incarnationOf, keys } from '../../shared/core/table';
import { newJob } from '../support/fakes';

const T0 = Date.parse('2026-06-01T00:00:00.000Z');
const MIN = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** One implementation of the due index, with the journal and the job store it reads. */
export interface DueIndexLeg {
  index: DueIndex;
  journal: Journal;
  store: JobStore;
}

export function dueIndexContract(setup: () => Promise<DueIndexLeg>): void {
  const run = Math.random().toString(36).slice(2, 8);
  let seq = 0;
  const jobId = () => `d-${run}-${++seq}`;
  const signal = { payload: { amount: 1 }, payloadHash: 'h1', at: iso(T0) };
  /** The entries of the item `key` in the bucket of `dueAt` (for its job), due by `upTo`. */
  const entriesOf = async (index: DueIndex, key: DueKey, jobOf: string, dueAt: number, upTo = dueAt) => {
    const { pk, sk } = typeof key === 'string' ? { pk: key, sk: undefined } : key;
    return (await index.query(dueBucket(dueAt, jobOf), upTo)).filter((entry) => entry.pk === pk && entry.sk === sk);
  };
  /** One incarnation of the job `id`. */
  const scopeOf = (id: string) => ({ jobId: id, incarnation: incarnationOf(iso(T0)) });

  describe('due index', () => {
    it('lists a signal delivered with a dueAt in its minute bucket, by its inbox key, once it is due', async () => {
      const { index, journal } = await setup();
      const id = jobId();
      const dueAt = T0 + 10 * MIN;
      await journal.deliver({ ...scopeOf(id), name: 'paid', signal, expiresAt: 0, dueAt });
      const key = inboxKey(scopeOf(id), 'paid');
      expect(await entriesOf(index, key, id, dueAt, dueAt - 1)).toEqual([]);
      expect(await entriesOf(index, key, id, dueAt)).toEqual([{ ...key, dueAt }]);
      expect(inboxOf(key)).toEqual({ ...scopeOf(id), name: 'paid' });
      expect(inboxOf({ pk: keys.job(id) })).toBeUndefined();
      expect(inboxOf(journalKey(scopeOf(id), 'signal', 'paid'))).toBeUndefined();
    });

    it('keeps the first send’s entry: a refused replay writes none, and a send without a dueAt has none', async () => {
      const { index, journal } = await setup();
      const id = jobId();
      const first = T0 + 10 * MIN;
      const later = T0 + 30 * MIN;
      await journal.deliver({ ...scopeOf(id), name: 'paid', signal, expiresAt: 0, dueAt: first });
      expect(await journal.deliver({ ...scopeOf(id), name: 'paid', signal, expiresAt: 0, dueAt: later })).toMatchObject(
        { stored: false },
      );
      const key = inboxKey(scopeOf(id), 'paid');
      expect(await entriesOf(index, key, id, first)).toEqual([{ ...key, dueAt: first }]);
      expect(await entriesOf(index, key, id, later)).toEqual([]);
      await journal.deliver({ ...scopeOf(id), name: 'shipped', signal, expiresAt: 0 });
      const plain = inboxKey(scopeOf(id), 'shipped');
      expect(await entriesOf(index, plain, id, first, later)).toEqual([]);
    });

    it('moves a signal’s entry only from the dueAt it has, and leaves the signal as it was', async () => {
      const { index, journal } = await setup();
      const id = jobId();
      const dueAt = T0 + 10 * MIN;
      const to = T0 + 15 * MIN;
      await journal.deliver({ ...scopeOf(id), name: 'paid', signal, expiresAt: 0, dueAt });
      const key = inboxKey(scopeOf(id), 'paid');
      expect(await index.moveDue(key, dueAt - 1, to)).toBe(false);
      expect(await index.moveDue(key, dueAt, to)).toBe(true);
      expect(await entriesOf(index, key, id, dueAt)).toEqual([]);
      expect(await entriesOf(index, key, id, to)).toEqual([{ ...key, dueAt: to }]);
      expect(await journal.signal({ ...scopeOf(id), name: 'paid' })).toEqual(signal);
      expect(await index.moveDue(inboxKey(scopeOf(id), 'never-sent'), undefined, to)).toBe(false);
    });

    it('loads a job with its due entry and repairs, and moves the entry only from the value read', async () => {
      const { index, store } = await setup();
      const id = jobId();
      await store.create(newJob({ id, type: 'echo', runAt: iso(T0), createdAt: iso(T0), updatedAt: iso(T0) }));
      expect(await index.loadJob(id)).toMatchObject({ job: { id, state: 'queued' }, repairs: 0 });
      expect((await index.loadJob(id))?.dueAt).toBeUndefined();
      const to = T0 + 20 * MIN;
      expect(await index.moveDue(keys.job(id), undefined, to, { repair: true })).toBe(true);
      expect(await index.moveDue(keys.job(id), undefined, to + MIN)).toBe(false);
      expect(await index.loadJob(id)).toMatchObject({ dueAt: to, repairs: 1 });
      expect(await entriesOf(index, keys.job(id), id, to)).toEqual([{ pk: keys.job(id), dueAt: to }]);
      expect(await index.loadJob(jobId())).toBeUndefined();
    });
  });
}
