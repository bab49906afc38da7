/**
 * The chaos run's plan: a small run (as in `npm test`) must plan the kills its coverage check
 * counts, whatever its random seed. With 200 jobs and a 3% kill rate a seed can plan none.
 * Likewise the system run's plan must aim cancels at running and retrying jobs.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CHAOS, MIN_PLANNED_KILLS, planChaosJobs } from '../chaos/chaos';
import { seeded } from '../chaos/seeded';
import { MIN_AIMED_CANCELS, type PlanOptions, planSystem } from '../chaos/system-plan';

const kills = (seed: number, jobs: number) =>
  planChaosJobs({ ...DEFAULT_CHAOS, jobs, seed, stallMs: 0 }, seeded(seed), ['chaos-a', 'chaos-b']).filter(
    (j) => (j.payload.killOnAttempts?.length ?? 0) > 0,
  );

describe('chaos plan', () => {
  it(`plans at least ${MIN_PLANNED_KILLS} kills for every seed of a 200-job run`, () => {
    for (let seed = 0; seed < 3000; seed++) {
      expect(kills(seed, 200).length, `seed ${seed}`).toBeGreaterThanOrEqual(MIN_PLANNED_KILLS);
    }
  });

  it('kills an added job on its first attempt and gives it an attempt more', () => {
    for (let seed = 0; seed < 300; seed++) {
      for (const job of kills(seed, 20)) {
        const at = job.payload.killOnAttempts?.[0] ?? 0;
        expect(at).toBeGreaterThanOrEqual(1);
        expect(job.maxAttempts).toBeGreaterThan(at);
      }
    }
  });
});

describe('system chaos plan', () => {
  const options: PlanOptions = {
    jobs: 200,
    types: ['sys-a', 'sys-b'],
    scheduleType: 'sys-rec',
    schedules: 3,
    horizonMs: 13 * 3600_000,
    leaseMs: 3000,
    timeoutMs: 6000,
    batchShare: 0.2,
    killRate: 0.03,
    duplicateRate: 0.08,
    controlRate: 0.08,
    dlqCopyRate: 0.03,
  };

  it(`aims at least ${MIN_AIMED_CANCELS} cancels at running attempts and at pending retries, for every seed`, () => {
    for (let seed = 0; seed < 1000; seed++) {
      const { jobs } = planSystem(options, seeded(seed));
      for (const aim of ['running', 'retrying'] as const) {
        const aimed = jobs.filter((j) => j.control?.aim === aim);
        expect(aimed.length, `seed ${seed} ${aim}`).toBeGreaterThanOrEqual(MIN_AIMED_CANCELS);
        for (const job of aimed) {
          // started at once, and in the aimed state for seconds
          expect(job.timing, `seed ${seed} ${job.id}`).toBe('now');
          expect(job.delaySeconds).toBeUndefined();
          expect(job.runAtOffsetMs).toBeUndefined();
          if (aim === 'running') expect(job.payload.sleepMs).toBeGreaterThanOrEqual(2500);
          else {
            expect(['flaky', 'always-fail']).toContain(job.behaviour);
            expect(job.backoff).toMatchObject({ kind: 'constant' });
            expect((job.backoff as { delayMs: number }).delayMs).toBeGreaterThanOrEqual(4000);
          }
        }
      }
    }
  });

  it('plans no controls at all with a control rate of 0', () => {
    const { jobs } = planSystem({ ...options, controlRate: 0 }, seeded(7));
    expect(jobs.filter((j) => j.control)).toEqual([]);
  });
});
