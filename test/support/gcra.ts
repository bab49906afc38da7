/**
 * The GCRA bound, as tests check it: any m starts within a window of length L must satisfy
 * `m ≤ burst + (L + toleranceMs) / interval` (see shared/core/pace.ts).
 */

/** The largest excess over the GCRA bound among all windows of `times` (≤ 0 when it holds). */
export function gcraExcess(times: readonly number[], intervalMs: number, burst: number, toleranceMs: number): number {
  return gcraWorst(times, intervalMs, burst, toleranceMs).excess;
}

/** The window of `times` (sorted) with the largest excess over the GCRA bound: its first and last times. */
export function gcraWorst(
  times: readonly number[],
  intervalMs: number,
  burst: number,
  toleranceMs: number,
): { excess: number; from: number; to: number } {
  const sorted = [...times].sort((a, b) => a - b);
  let worst = { excess: Number.NEGATIVE_INFINITY, from: Number.NaN, to: Number.NaN };
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i; j < sorted.length; j++) {
      const from = sorted[i] as number;
      const to = sorted[j] as number;
      const excess = j - i + 1 - (burst + (to - from + toleranceMs) / intervalMs);
      if (excess > worst.excess) worst = { excess, from, to };
    }
  }
  return worst;
}
