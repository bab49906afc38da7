/**
 * The chaos run's plan: a small run (as in `npm test`) must plan the kills its coverage check
 * counts, whatever its random seed. With 200 jobs and a 3% kill rate a seed can plan none.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CHAOS, MIN_PLANNED_KILLS, planChaosJobs } from '../chaos/chaos';
import { seeded } from '../chaos/seeded';

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
