import { describe, expect, it } from 'vitest';
import type { Job } from '../../shared/core/job';
import {
  classifyRefusedClaim,
  DEFAULT_LEASE_MS,
  heartbeatIntervalMs,
  heartbeatVisibilitySeconds,
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
    expect(classifyRefusedClaim(stored, NOW)).toEqual({ kind: 'finished', job: stored });
  });

  it('reports a running job under a live lease as busy, whatever its attempts', () => {
    const live = job('running', { leaseExpiresAt: NOW + 1, leaseOwner: 'worker-a' });
    expect(classifyRefusedClaim(live, NOW)).toEqual({ kind: 'busy', job: live });
    const lastAttempt = job('running', { attempts: 3, leaseExpiresAt: NOW + 30_000 });
    expect(classifyRefusedClaim(lastAttempt, NOW).kind).toBe('busy');
  });

  it('treats a lease expiring exactly now as live (the claim needs leaseExpiresAt < now)', () => {
    expect(classifyRefusedClaim(job('running', { leaseExpiresAt: NOW }), NOW).kind).toBe('busy');
    expect(classifyRefusedClaim(job('running', { attempts: 3, leaseExpiresAt: NOW - 1 }), NOW).kind).toBe('exhausted');
  });

  it('reports a running job whose last allowed attempt lost its lease as exhausted', () => {
    const stale = job('running', { attempts: 3, maxAttempts: 3, leaseExpiresAt: NOW - 5000 });
    expect(classifyRefusedClaim(stale, NOW)).toEqual({ kind: 'exhausted', job: stale });
  });

  it('treats a running job without a lease expiry as expired', () => {
    expect(classifyRefusedClaim(job('running', { attempts: 3 }), NOW).kind).toBe('exhausted');
  });

  it('reports a running job with an expired lease and attempts left as missing (type mismatch)', () => {
    expect(classifyRefusedClaim(job('running', { attempts: 1, leaseExpiresAt: NOW - 1 }), NOW)).toEqual({
      kind: 'missing',
    });
  });

  it.each(['scheduled', 'queued', 'retrying'] as const)(
    'reports a claimable %s job with attempts left as missing (the refusal was the type)',
    (state) => {
      expect(classifyRefusedClaim(job(state, { attempts: 1, leaseExpiresAt: undefined }), NOW)).toEqual({
        kind: 'missing',
      });
    },
  );

  it('covers every state', () => {
    const states: JobState[] = ['scheduled', 'queued', 'running', 'retrying', 'succeeded', 'failed', 'cancelled'];
    const kinds = states.map((state) => classifyRefusedClaim(job(state, { leaseExpiresAt: NOW + 1 }), NOW).kind);
    expect(kinds).toEqual(['missing', 'missing', 'busy', 'missing', 'finished', 'finished', 'finished']);
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
    [30_000, 60],
    [1500, 3],
    [1, 1],
    [21_600_000, 43_200],
    [100_000_000, 43_200],
  ])('sets visibility of two leases (%i ms lease → %i s), at most 12 h', (leaseMs, expected) => {
    expect(heartbeatVisibilitySeconds(leaseMs)).toBe(expected);
  });

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
