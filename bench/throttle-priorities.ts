/**
 * Priorities in a throttle's line on local AWS, through the API and the workers: a type with a
 * throttle of 20 starts a second (no burst) and priorities. `low` jobs of priority 0 are enqueued
 * and join the key's line (one start each 50 ms drains it); once every one has joined, `high`
 * jobs of priority 9 are enqueued. Reported: how many low jobs started after the last high one
 * had joined and before the last high one started (the goal: none: every turn taken once the
 * high ones are in line goes to them), and each group's wait from its enqueue to its start.
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

export interface ThrottlePriorityBench {
  /** Starts per second. */
  perSecond: number;
  low: number;
  high: number;
  /** Low jobs that started after the last high one joined the line, and before the last high one started. */
  lowBetween: number;
  /** Low jobs still waiting (not started) when the last high one joined. */
  lowWaitingThen: number;
  /** Wait from enqueue to start, ms. */
  highWaitMs: Percentiles;
  lowWaitMs: Percentiles;
  /** Starts per second while the line drained (the throttle's pace, were the line to keep up). */
  startsPerSecond: number;
}

const PER_SECOND = 20;
const spec = defineJobType({
  type: 'prio-paced',
  payload: z.object({ i: z.int() }),
  timeoutMs: 60_000,
  throttle: { limit: PER_SECOND, periodSeconds: 1 },
  priority: { default: 0, agingSeconds: 3600 },
});

/** The worker's log line when a job joins a throttle's line. */
const JOINED = 'waiting in its throttle line';

export async function measureThrottlePriorities(
  aws: LocalAws,
  low: number,
  high: number,
): Promise<ThrottlePriorityBench> {
  const starts = new Map<string, number>();
  const joined = new Map<string, number>();
  const def: JobDefinition = {
    spec,
    run: (async (_p: unknown, ctx: { jobId: string }) => {
      if (!starts.has(ctx.jobId)) starts.set(ctx.jobId, performance.now());
      return { ok: true };
    }) as never,
  };
  const sink = (line: string) => {
    if (!line.includes(JOINED)) return;
    const { message, jobId } = JSON.parse(line) as { message?: string; jobId?: unknown };
    if (message === JOINED && typeof jobId === 'string' && !joined.has(jobId)) joined.set(jobId, performance.now());
  };
  aws.applyEnv();
  const platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('bench-prio-paced'),
    jobs: [def],
    logger: createLogger({ level: 'info', sink }),
    leaseMs: 30_000,
    runner: { batchSize: 10, maxConcurrency: 4, waitTimeSeconds: 1 },
  });
  const enqueuedAt = new Map<string, number>();
  const batch = async (jobs: { id: string; priority?: number }[]) => {
    for (let i = 0; i < jobs.length; i += 100) {
      const part = jobs.slice(i, i + 100);
      const sent = performance.now();
      const response = await fetch(`${platform.url}/jobs/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          jobs: part.map((j, k) => ({
            id: j.id,
            type: spec.type,
            payload: { i: i + k },
            ...(j.priority !== undefined ? { priority: j.priority } : {}),
          })),
        }),
      });
      if (response.status >= 300) throw new Error(`throttle priorities bench: batch answered ${response.status}`);
      for (const j of part) enqueuedAt.set(j.id, sent);
    }
  };
  try {
    const lows = Array.from({ length: low }, (_, i) => ({ id: `low-${i}` }));
    const highs = Array.from({ length: high }, (_, i) => ({ id: `high-${i}`, priority: 9 }));
    await batch(lows);
    // every low job has started or joined the line
    await until(
      'throttle priorities',
      () => lows.every((l) => starts.has(l.id) || joined.has(l.id)),
      300_000,
      'the low jobs to join the line',
    );
    await batch(highs);
    await until(
      'throttle priorities',
      () => highs.every((h) => starts.has(h.id) || joined.has(h.id)),
      120_000,
      'the high jobs to join the line',
    );
    const lastJoin = Math.max(...highs.map((h) => joined.get(h.id) ?? 0));
    await until('throttle priorities', () => starts.size === low + high, 600_000, 'every job to start');
    const lastHigh = Math.max(...highs.map((h) => starts.get(h.id) ?? Number.POSITIVE_INFINITY));
    const lowStarts = lows.map((l) => starts.get(l.id) ?? Number.POSITIVE_INFINITY);
    const waitOf = (ids: { id: string }[]) =>
      ids.map(({ id }) => (starts.get(id) ?? Number.NaN) - (enqueuedAt.get(id) ?? Number.NaN));
    const all = [...starts.values()].sort((a, b) => a - b);
    const first = all[0] ?? 0;
    const last = all.at(-1) ?? 0;
    return {
      perSecond: PER_SECOND,
      low,
      high,
      lowBetween: lowStarts.filter((t) => t > lastJoin && t < lastHigh).length,
      lowWaitingThen: lowStarts.filter((t) => t > lastJoin).length,
      highWaitMs: percentiles(waitOf(highs)),
      lowWaitMs: percentiles(waitOf(lows)),
      startsPerSecond: last > first ? ((all.length - 1) * 1000) / (last - first) : Number.NaN,
    };
  } finally {
    await platform.stop();
  }
}
