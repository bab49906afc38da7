/** What the scenarios that run jobs through the workers share (priorities, throttle priorities, noisy neighbour). */

/** The `q` quantile of `values` (nearest rank, from below). */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

/** The median and 99th percentile of some waits, ms. */
export interface Percentiles {
  p50: number;
  p99: number;
}

/** The {@link Percentiles} of `values`. */
export function percentiles(values: readonly number[]): Percentiles {
  return { p50: quantile(values, 0.5), p99: quantile(values, 0.99) };
}

/** Waits until `what` holds, looking every `everyMs`; throws after `ms`, naming the scenario and `label`. */
export async function until(
  scenario: string,
  what: () => boolean | Promise<boolean>,
  ms: number,
  label: string,
  everyMs = 100,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await what()) return;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`${scenario} bench: timed out waiting for ${label}`);
}
