import { describe, expect, it } from 'vitest';
import type { Job } from '../../shared/core/job';
import {
  claimableInMs,
  classifyRefusedClaim,
  DEFAULT_LEASE_MS,
  heartbeatIntervalMs,
  heartbeatVisibilitySeconds,
  isOwnAppliedEnd,
  leaseHeld,
  MAX_CLOCK_SKEW_MS,
} from '../../shared/core/lease';
import type { JobState } from '../../shared/core/states';
import { newJob } from '../support/fakes';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');

function job(state: JobState, overrides: Partial<Job> = {}): Job {
  return newJob({ id: 'job-1', type: 'echo', state, attempts: 1, maxAttempts: 3, leaseToken: 1, ...overrides });
}

describe('classifyRefusedClaim', () => {
  it.each(['succeeded', 'failed', 'cancelled'] as const)('reports a %s job as finished', (state) => {
    const stored = job(state, { attempts: 3, leaseExpiresAt: NOW + 10_000 });
    expect(classifyRefusedClaim(stored, NOW, 'echo')).toEqual({ kind: 'finished', job: stored });
  });

  it('reports a running job under a live lease as busy, whatever its attempts', () => {
    const live = job('running', { leaseExpiresAt: NOW + 1, leaseOwner: 'worker-a' });
    expect(classifyRefusedClaim(live, NOW, 'echo')).toEqual({ kind: 'busy', job: live });
    const lastAttempt = job('running', { attempts: 3, leaseExpiresAt: NOW + 30_000 });
    expect(classifyRefusedClaim(lastAttempt, NOW, 'echo').kind).toBe('busy');
  });

  it('treats a lease as held until it expired more than MAX_CLOCK_SKEW_MS ago (the claimer’s clock may be ahead)', () => {
    expect(classifyRefusedClaim(job('running', { leaseExpiresAt: NOW }), NOW, 'echo').kind).toBe('busy');
    const edge = NOW - MAX_CLOCK_SKEW_MS;
    expect(classifyRefusedClaim(job('running', { attempts: 3, leaseExpiresAt: edge }), NOW, 'echo').kind).toBe('busy');
    expect(classifyRefusedClaim(job('running', { attempts: 3, leaseExpiresAt: edge - 1 }), NOW, 'echo').kind).toBe(
      'exhausted',
    );
    expect(leaseHeld({ leaseExpiresAt: edge }, NOW)).toBe(true);
    expect(leaseHeld({ leaseExpiresAt: edge - 1 }, NOW)).toBe(false);
    expect(leaseHeld({}, NOW)).toBe(false);
  });

  it('reports a running job whose last allowed attempt lost its lease as exhausted', () => {
    const stale = job('running', { attempts: 3, maxAttempts: 3, leaseExpiresAt: NOW - 5000 });
    expect(classifyRefusedClaim(stale, NOW, 'echo')).toEqual({ kind: 'exhausted', job: stale });
  });

  it('treats a running job without a lease expiry as expired', () => {
    expect(classifyRefusedClaim(job('running', { attempts: 3 }), NOW, 'echo').kind).toBe('exhausted');
  });

  it('reports a running job with an expired lease and attempts left as missing (type mismatch)', () => {
    const expired = NOW - MAX_CLOCK_SKEW_MS - 1;
    expect(classifyRefusedClaim(job('running', { attempts: 1, leaseExpiresAt: expired }), NOW, 'echo')).toEqual({
      kind: 'missing',
    });
  });

  it.each(['scheduled', 'queued', 'retrying'] as const)(
    'reports a claimable %s job with attempts left as missing (the refusal was the type)',
    (state) => {
      expect(classifyRefusedClaim(job(state, { attempts: 1, leaseExpiresAt: undefined }), NOW, 'echo')).toEqual({
        kind: 'missing',
      });
    },
  );

  it('reports a waiting job whose earlier attempt’s lease may still be held as fenced (cancelled, then retried)', () => {
    for (const state of ['scheduled', 'queued', 'retrying'] as const) {
      const restarted = job(state, { attempts: 0, leaseExpiresAt: NOW - MAX_CLOCK_SKEW_MS });
      expect(classifyRefusedClaim(restarted, NOW, 'echo')).toEqual({ kind: 'fenced', job: restarted });
      expect(claimableInMs(restarted, NOW)).toBe(1);
    }
  });

  it('waits for the later of runAt and the lease fence', () => {
    const both = job('retrying', { runAt: new Date(NOW + 60_000).toISOString(), leaseExpiresAt: NOW + 5_000 });
    expect(classifyRefusedClaim(both, NOW, 'echo').kind).toBe('fenced');
    expect(claimableInMs(both, NOW)).toBe(60_000);
    const fenceLater = job('queued', { runAt: new Date(NOW + 1_500).toISOString(), leaseExpiresAt: NOW + 30_000 });
    expect(claimableInMs(fenceLater, NOW)).toBe(30_000 + MAX_CLOCK_SKEW_MS + 1);
  });

  it('reports a job of another type as missing, whatever its state (a stale message for a reused id)', () => {
    const exhausted = job('running', { attempts: 3, leaseExpiresAt: NOW - MAX_CLOCK_SKEW_MS - 1 });
    expect(classifyRefusedClaim(exhausted, NOW, 'echo').kind).toBe('exhausted');
    expect(classifyRefusedClaim(exhausted, NOW, 'other')).toEqual({ kind: 'missing' });
    expect(classifyRefusedClaim(job('succeeded'), NOW, 'other')).toEqual({ kind: 'missing' });
  });

  it('covers every state', () => {
    const states: JobState[] = ['scheduled', 'queued', 'running', 'retrying', 'succeeded', 'failed', 'cancelled'];
    const kinds = states.map(
      (state) => classifyRefusedClaim(job(state, { leaseExpiresAt: NOW + 1 }), NOW, 'echo').kind,
    );
    expect(kinds).toEqual(['fenced', 'fenced', 'busy', 'fenced', 'finished', 'finished', 'finished']);
  });

  it('tells our own applied attempt-ending write from another writer’s under the same token', () => {
    const failed = job('failed', { leaseToken: 4, lastWriter: 'worker-b:1' });
    expect(isOwnAppliedEnd(failed, 4, { state: 'failed', writer: 'worker-b:1' })).toBe(true);
    expect(isOwnAppliedEnd(failed, 4, { state: 'failed', writer: 'worker-a:1' })).toBe(false);
    expect(isOwnAppliedEnd(failed, 3, { state: 'failed', writer: 'worker-b:1' })).toBe(false);
    expect(isOwnAppliedEnd(failed, 4, { state: 'succeeded', writer: 'worker-b:1' })).toBe(false);
  });
});

describe('heartbeat timing', () => {
  it('uses a 30 s lease by default', () => {
    expect(DEFAULT_LEASE_MS).toBe(30_000);
  });

  it.each([
    [30_000, 10_000],
    [1000, 333],
    [300, 100],
    [200, 100],
    [0, 100],
  ])('beats every third of a %i ms lease, at least every 100 ms: %i', (leaseMs, expected) => {
    expect(heartbeatIntervalMs(leaseMs)).toBe(expected);
  });

  it.each([
    [30_000, 62],
    [1500, 5],
    [1, 3],
    [21_600_000, 42_000],
    [100_000_000, 42_000],
  ])(
    'sets visibility of two leases and the skew margin (%i ms lease → %i s), at most 11 h 40 min',
    (leaseMs, expected) => {
      expect(heartbeatVisibilitySeconds(leaseMs)).toBe(expected);
    },
  );

  it('keeps the message hidden longer than the lease it extends', () => {
    for (const leaseMs of [100, 999, 30_000, 600_000]) {
      expect(heartbeatVisibilitySeconds(leaseMs) * 1000).toBeGreaterThan(leaseMs);
    }
  });

  it('fits two heartbeats in a lease of 300 ms or more, so one lost beat does not lose the lease', () => {
    for (const leaseMs of [300, 999, 30_000, 600_000]) {
      expect(heartbeatIntervalMs(leaseMs) * 2).toBeLessThan(leaseMs);
    }
  });
});
