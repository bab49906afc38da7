/**
 * The noisy-neighbour goal of `npm run bench` (bench/goals.ts): it takes the median round's
 * ratio of the quiet tenants' p99 with fair share over their p99 alone, so that one round's swing
 * neither meets nor misses it alone.
 */
import { describe, expect, it } from 'vitest';
import { fairShareGoal } from '../../bench/goals';
import { medianRound, type NoisyNeighbourBench, type NoisyRun } from '../../bench/noisy-neighbour';

const run = (row: NoisyRun['row'], p99: number): NoisyRun => ({
  row,
  type: 't',
  quiet: { p50: p99 / 2, p99, max: p99 },
  quietInQueue: { p50: 1, p99: 2, max: 2 },
  transactions: { sent: 0, refused: 0 },
  seconds: 1,
});
const round = (alone: number, fair: number) => ({ alone: run('alone', alone), fair: run('fair share', fair) });

function bench(rounds: { alone: NoisyRun; fair: NoisyRun }[]): NoisyNeighbourBench {
  const [first] = rounds;
  if (!first) throw new Error('no rounds');
  return {
    limit: 10,
    jobMs: 50,
    noisy: 2000,
    quietEach: 20,
    quietTenants: 4,
    alone: first.alone,
    oldestFirst: run('oldest-first', 40_000),
    fair: first.fair,
    rounds,
  };
}

describe('the noisy-neighbour goal', () => {
  it('takes the median round: one round over 2× does not miss it', () => {
    const rounds = [round(1000, 2500), round(1000, 1400), round(1000, 1600)];
    expect(medianRound(rounds)).toBe(rounds[2]);
    const goal = fairShareGoal(bench(rounds));
    expect(goal.met).toBe(true);
    expect(goal.measured).toContain('median of 3 rounds (2.50×, 1.40×, 1.60×)');
  });

  it('misses it when the median round is over 2×', () => {
    const goal = fairShareGoal(bench([round(1000, 2500), round(1000, 2100), round(1000, 1600)]));
    expect(goal.met).toBe(false);
  });

  it('compares each round with its own alone run', () => {
    // the second round's alone is slower: its fair share is 1.5× of it (the median), not 3× of the first's
    const rounds = [round(1000, 2500), round(2000, 3000), round(1000, 1400)];
    expect(medianRound(rounds)).toBe(rounds[1]);
    expect(fairShareGoal(bench(rounds)).met).toBe(true);
  });
});
