/**
 * Priorities on local AWS, through the API and the workers: a type with a limit of 10 and
 * priorities. Ten jobs hold its places while `low` jobs of priority 0 join its line, then `high`
 * jobs of priority 9 join it; the holders are let go and the line drains. Reported: how many
 * low jobs started before the last high one (the goal: none), and each group's wait from its
 * enqueue to its start.
 */
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { defineJobType } from '../shared/core/job-type';
import { createLogger } from '../shared/logger';
import type { JobDefinition } from '../shared/runtime/job-definition';
import type { LocalAws } from '../test/local-aws/index';
import { startLocalPlatform } from '../test/local-aws/local-platform';
import { uniquePrefix } from '../test/local-aws/namespace';
import { type Percentiles, percentiles, until } from './scenario';

export interface PriorityBench {
  limit: number;
  low: number;
  high: number;
  /** Low jobs handed a place before the last high one was (all of them waited when the high ones came). */
  lowAdmittedBeforeLastHigh: number;
  /**
   * Low jobs that started before the last high one: a place handed on is a message sent, and two
   * messages sent close together may start in either order.
   */
  lowBeforeLastHigh: number;
  /** Wait from enqueue to start, ms. */
  highWaitMs: Percentiles;
  lowWaitMs: Percentiles;
  /** From letting the holders go to the last start. */
  drainSeconds: number;
}

const LIMIT = 10;
const spec = defineJobType({
  type: 'prio',
  payload: z.object({ hold: z.boolean(), ms: z.number() }),
  timeoutMs: 120_000,
  concurrency: [{ limit: LIMIT }],
  priority: { default: 0, agingSeconds: 3600 },
});

export async function measurePriorities(aws: LocalAws, low: number, high: number): Promise<PriorityBench> {
  const starts = new Map<string, number>();
  let letGo: () => void = () => {};
  const holding = new Promise<void>((resolve) => {
    letGo = resolve;
  });
  const def: JobDefinition = {
    spec,
    run: (async (p: { hold: boolean; ms: number }, ctx: { jobId: string }) => {
      if (!starts.has(ctx.jobId)) starts.set(ctx.jobId, performance.now());
      if (p.hold) await holding;
      await new Promise((r) => setTimeout(r, p.ms));
      return { ok: true };
    }) as never,
  };
  // the order places were handed on in, from the workers' "handed a place in line on" lines
  const admitted: string[] = [];
  const sink = (line: string) => {
    const { message, to } = JSON.parse(line) as { message?: string; to?: unknown };
    if (message === 'handed a place in line on' && typeof to === 'string') admitted.push(to);
  };
  aws.applyEnv();
  const platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('bench-prio'),
    jobs: [def],
    logger: createLogger({ level: 'info', sink }),
    leaseMs: 30_000,
    runner: { batchSize: 10, maxConcurrency: 4, waitTimeSeconds: 1 },
  });
  const enqueuedAt = new Map<string, number>();
  const batch = async (jobs: { id: string; priority?: number; hold?: boolean }[]) => {
    for (let i = 0; i < jobs.length; i += 100) {
      const part = jobs.slice(i, i + 100);
      const response = await fetch(`${platform.url}/jobs/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          jobs: part.map((j) => ({
            id: j.id,
            type: 'prio',
            payload: { hold: j.hold ?? false, ms: 20 },
            ...(j.priority !== undefined ? { priority: j.priority } : {}),
          })),
        }),
      });
      if (response.status >= 300) throw new Error(`priorities bench: batch answered ${response.status}`);
      const now = performance.now();
      for (const j of part) enqueuedAt.set(j.id, now);
    }
  };
  const waiting = async () => {
    const key = (await fetch(`${platform.url}/types/prio/keys/*`).then((r) => r.json())) as {
      limits?: { waiting?: number }[];
    };
    return key.limits?.[0]?.waiting ?? 0;
  };
  try {
    const holders = Array.from({ length: LIMIT }, (_, i) => ({ id: `hold-${i}`, hold: true }));
    const lows = Array.from({ length: low }, (_, i) => ({ id: `low-${i}` }));
    const highs = Array.from({ length: high }, (_, i) => ({ id: `high-${i}`, priority: 9 }));
    await batch(holders);
    await until('priorities', async () => starts.size === LIMIT, 60_000, 'the holders to start');
    await batch(lows);
    await until('priorities', async () => (await waiting()) === low, 300_000, 'the low jobs to join the line');
    await batch(highs);
    await until('priorities', async () => (await waiting()) === low + high, 120_000, 'the high jobs to join the line');
    const released = performance.now();
    letGo();
    await until('priorities', async () => starts.size === LIMIT + low + high, 600_000, 'every job to start');
    const lastHigh = Math.max(...highs.map((h) => starts.get(h.id) ?? Number.POSITIVE_INFINITY));
    const lowStarts = lows.map((l) => starts.get(l.id) ?? Number.POSITIVE_INFINITY);
    const waitOf = (ids: { id: string }[]) =>
      ids.map(({ id }) => (starts.get(id) ?? Number.NaN) - (enqueuedAt.get(id) ?? Number.NaN));
    const highWaits = waitOf(highs);
    const lowWaits = waitOf(lows);
    const order = admitted.filter((id) => !id.startsWith('hold-'));
    const lastHighAdmitted = Math.max(...highs.map((h) => order.indexOf(h.id)));
    return {
      limit: LIMIT,
      low,
      high,
      lowAdmittedBeforeLastHigh:
        lastHighAdmitted < 0 ? low : order.slice(0, lastHighAdmitted).filter((id) => id.startsWith('low-')).length,
      lowBeforeLastHigh: lowStarts.filter((t) => t < lastHigh).length,
      highWaitMs: percentiles(highWaits),
      lowWaitMs: percentiles(lowWaits),
      drainSeconds: (Math.max(...lowStarts, lastHigh) - released) / 1000,
    };
  } finally {
    letGo();
    await platform.stop();
  }
}
