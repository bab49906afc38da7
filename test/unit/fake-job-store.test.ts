/**
 * What only the fakes do: their test hooks (seed, peek, due, failNext, calls) and copying. Their
 * behaviour as ports is pinned by the shared contract (test/contract/job-store.contract.ts, run
 * by test/unit/contract-fakes.test.ts), which the DynamoDB adapters pass too.
 */
import { describe, expect, it } from 'vitest';
import { createDueAttributes } from '../../shared/core/due';
import { FakeJobControl } from '../support/control-fakes';
import { FakeJobStore, newJob } from '../support/fakes';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');
const claimInput = { id: 'j', type: 'echo', owner: 'w1', now: NOW, leaseMs: 30_000 };

describe('FakeJobStore test hooks', () => {
  it('returns copies, not the stored object', async () => {
    const store = new FakeJobStore();
    store.seed(newJob({ id: 'j', type: 'echo' }, NOW));
    const result = await store.claim(claimInput);
    if (result.kind !== 'claimed') throw new Error('expected a claim');
    result.job.state = 'failed';
    expect(store.peek('j')?.state).toBe('running');
    const due = store.due('j');
    if (due) due.dueAt = 0;
    expect(store.due('j')?.dueAt).not.toBe(0);
  });

  it('seeds with the due attributes a create writes, unless given', () => {
    const store = new FakeJobStore();
    const job = newJob(
      { id: 'j', type: 'echo', state: 'scheduled', runAt: new Date(NOW + 3_600_000).toISOString() },
      NOW,
    );
    store.seed(job);
    expect(store.due('j')).toEqual(createDueAttributes(job));
    expect(store.due('j')?.dueAt).toBe(NOW + 3_600_000 + 60_000);
    store.seed(job, {});
    expect(store.due('j')).toEqual({});
    expect(store.due('other')).toBeUndefined();
  });

  it('failNext throws before touching the store; calls records every call', async () => {
    const store = new FakeJobStore();
    store.seed(newJob({ id: 'j', type: 'echo' }, NOW));
    const boom = new Error('boom');
    store.failNext('claim', boom);
    await expect(store.claim(claimInput)).rejects.toBe(boom);
    expect(store.peek('j')?.state).toBe('queued');
    expect((await store.claim(claimInput)).kind).toBe('claimed');
    expect(store.calls).toEqual([
      { method: 'claim', id: 'j' },
      { method: 'claim', id: 'j' },
    ]);
  });

  it('FakeJobControl works on the store it is given', async () => {
    const store = new FakeJobStore();
    store.seed(newJob({ id: 'j', type: 'echo' }, NOW));
    const control = new FakeJobControl(store);
    const result = await control.cancel({ id: 'j', type: 'echo', from: ['queued'], now: NOW, expiresAt: 1 });
    expect(result.kind).toBe('applied');
    expect(store.peek('j')?.state).toBe('cancelled');
    expect(store.due('j')).toEqual({});
  });
});
