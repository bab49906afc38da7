/**
 * The worker tests trust FakeJobStore to refuse what the DynamoDB adapter's conditions refuse.
 * These cases pin that down, so a lenient fake cannot make a worker test pass by accident.
 */
import { describe, expect, it } from 'vitest';
import type { Job } from '../../shared/core/job';
import { LeaseLostError } from '../../shared/errors';
import { FakeJobStore, newJob } from '../support/fakes';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');
const claimInput = { id: 'j', type: 'echo', owner: 'w1', now: NOW, leaseMs: 30_000 };

function storeWith(overrides: Partial<Job> = {}): FakeJobStore {
  const store = new FakeJobStore();
  store.seed(newJob({ id: 'j', type: 'echo', ...overrides }, NOW));
  return store;
}

describe('FakeJobStore.claim', () => {
  it('starts an attempt: running, attempts + 1, token + 1, lease until now + leaseMs', async () => {
    const store = storeWith({ attempts: 1, leaseToken: 4, state: 'retrying' });
    const result = await store.claim(claimInput);
    expect(result.kind).toBe('claimed');
    expect(store.peek('j')).toMatchObject({
      state: 'running',
      attempts: 2,
      leaseToken: 5,
      leaseOwner: 'w1',
      leaseExpiresAt: NOW + 30_000,
      startedAt: '2026-03-01T12:00:00.000Z',
    });
  });

  it('refuses a job of another type and leaves it as it was', async () => {
    const store = storeWith();
    expect(await store.claim({ ...claimInput, type: 'sleep' })).toEqual({ kind: 'missing' });
    expect(store.peek('j')).toMatchObject({ state: 'queued', attempts: 0, leaseToken: 0 });
  });

  it('refuses a claimable job that has used all its attempts', async () => {
    const store = storeWith({ state: 'retrying', attempts: 3, maxAttempts: 3 });
    expect((await store.claim(claimInput)).kind).toBe('exhausted');
    expect(store.peek('j')?.state).toBe('retrying');
  });

  it('refuses a running job whose lease is live, even if it expires exactly now', async () => {
    const store = storeWith({ state: 'running', attempts: 1, leaseToken: 1, leaseExpiresAt: NOW });
    expect((await store.claim(claimInput)).kind).toBe('busy');
  });

  it('takes over a running job whose lease expired', async () => {
    const store = storeWith({ state: 'running', attempts: 1, leaseToken: 1, leaseExpiresAt: NOW - 1 });
    const result = await store.claim(claimInput);
    expect(result.kind === 'claimed' && result.job.leaseToken).toBe(2);
  });

  it('reports a missing job as missing', async () => {
    expect(await new FakeJobStore().claim(claimInput)).toEqual({ kind: 'missing' });
  });

  it('returns copies, not the stored object', async () => {
    const store = storeWith();
    const result = await store.claim(claimInput);
    if (result.kind !== 'claimed') throw new Error('expected a claim');
    result.job.state = 'failed';
    expect(store.peek('j')?.state).toBe('running');
  });
});

describe('FakeJobStore fenced writes', () => {
  async function claimed(): Promise<{ store: FakeJobStore; job: Job }> {
    const store = storeWith();
    const result = await store.claim(claimInput);
    if (result.kind !== 'claimed') throw new Error('expected a claim');
    return { store, job: result.job };
  }

  it('applies a write fenced by the current token', async () => {
    const { store, job } = await claimed();
    await store.heartbeat({ job, now: NOW + 10_000, leaseMs: 30_000 });
    expect(store.peek('j')?.leaseExpiresAt).toBe(NOW + 40_000);
    await store.succeed({ job, now: NOW + 20_000, result: { ok: 1 }, expiresAt: 99 });
    expect(store.peek('j')).toMatchObject({ state: 'succeeded', result: { ok: 1 }, expiresAt: 99 });
    expect(store.peek('j')?.leaseOwner).toBeUndefined();
  });

  it('refuses a write with an old token', async () => {
    const { store, job } = await claimed();
    await expect(store.succeed({ job: { ...job, leaseToken: 0 }, now: NOW, result: 1, expiresAt: 1 })).rejects.toThrow(
      LeaseLostError,
    );
    expect(store.peek('j')?.state).toBe('running');
  });

  it('refuses every write once the job left running', async () => {
    const { store, job } = await claimed();
    await store.fail({ job, now: NOW, errors: [], expiresAt: 1 });
    await expect(store.heartbeat({ job, now: NOW, leaseMs: 1 })).rejects.toThrow(LeaseLostError);
    await expect(store.retry({ job, now: NOW, runAt: NOW, errors: [] })).rejects.toThrow(LeaseLostError);
    await expect(store.succeed({ job, now: NOW, result: 1, expiresAt: 1 })).rejects.toThrow(LeaseLostError);
    expect(store.peek('j')?.state).toBe('failed');
  });

  it('derives lastError from the stored history, as the adapter does', async () => {
    const { store, job } = await claimed();
    const entry = { attempt: 1, at: '2026-03-01T12:00:00.000Z', reason: 'error', name: 'Error', message: 'x' };
    await store.retry({ job, now: NOW, runAt: NOW + 1000, errors: [entry] });
    expect(store.peek('j')).toMatchObject({ state: 'retrying', lastError: entry, runAt: '2026-03-01T12:00:01.000Z' });
  });
});

describe('FakeJobStore.create and deleteUndispatched', () => {
  it('creates once and returns the existing job after', async () => {
    const store = new FakeJobStore();
    const job = newJob({ id: 'j', type: 'echo' }, NOW);
    expect(await store.create(job)).toEqual({ created: true });
    const again = await store.create({ ...job, payload: { other: true } });
    expect(again.created === false && again.existing.payload).toEqual({});
  });

  it('deletes only an undispatched job with the same payload hash', async () => {
    const store = storeWith({ payloadHash: 'h1' });
    expect(await store.deleteUndispatched('j', 'h2')).toBe(false);
    expect(await store.deleteUndispatched('j', 'h1')).toBe(true);
    expect(store.peek('j')).toBeUndefined();
    const started = storeWith({ payloadHash: 'h1', attempts: 1, state: 'retrying' });
    expect(await started.deleteUndispatched('j', 'h1')).toBe(false);
  });
});
