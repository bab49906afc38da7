/**
 * The GCRA bound, as tests check it: any m starts within a window of length L must satisfy
 * `m ≤ burst + (L + toleranceMs) / interval` (see shared/core/pace.ts).
 */

/** The largest excess over the GCRA bound among all windows of `times` (≤ 0 when it holds). */
export function gcraExcess(times: readonly number[], intervalMs: number, burst: number, toleranceMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let worst = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i; j < sorted.length; j++) {
      const allowed = burst + ((sorted[j] as number) - (sorted[i] as number) + toleranceMs) / intervalMs;
      worst = Math.max(worst, j - i + 1 - allowed);
    }
  }
  return worst;
}
