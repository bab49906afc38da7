/**
 * The platform in memory with one type of a limit of 1 shared fairly between tenants, for the
 * tests of a place taken at enqueue (shared/api/enqueue/line.ts): `fairPlatform()` registers the
 * platform's stop after each test and gives `start`, which starts it with a handler that records
 * the jobs it starts.
 */
import { afterEach } from 'vitest';
import { z } from 'zod';
import { createClient } from '../../shared/client';
import { ManualClock } from '../../shared/core/clock';
import { defineJobType, type JobTypeSpec } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import { type MemoryPlatform, startMemoryPlatform } from '../local-aws/memory-platform';

export const T0 = Date.parse('2026-06-01T09:00:00.000Z');
const payload = z.object({ t: z.string(), i: z.int() });
/** Fair between tenants `t`, one place for the whole type. */
export const fairSpec = defineJobType({
  type: 'tenant-fair',
  payload,
  timeoutMs: 60_000,
  concurrency: [{ limit: 1, fairBy: (p) => p.t }],
});
/** The same, with a throttle: its gate comes before its slots, so its jobs take no place at enqueue. */
export const throttledSpec = defineJobType({
  type: 'tenant-throttled',
  payload,
  timeoutMs: 60_000,
  throttle: { limit: 100, periodSeconds: 1 },
  concurrency: [{ limit: 1, fairBy: (p) => p.t }],
});
/** The fair type's one slot. */
export const FAIR_SLOT = { scope: 'tenant-fair#0', key: '*' };

export function fairPlatform() {
  let platform: MemoryPlatform | undefined;
  afterEach(async () => {
    await platform?.stop();
    platform = undefined;
  });
  return {
    async start(
      options: {
        spec?: JobTypeSpec;
        run?: never;
        clock?: ManualClock;
        visibilityTimeoutSeconds?: number;
        /** Receives every log line (JSON), at info and above. @default none: silent */
        logs?: (line: string) => void;
      } = {},
    ) {
      const spec = options.spec ?? fairSpec;
      const started: string[] = [];
      const run =
        options.run ??
        ((async (_p: unknown, ctx: { jobId: string }) => {
          started.push(ctx.jobId);
          return { ok: true };
        }) as never);
      const clock = options.clock ?? new ManualClock(T0);
      platform = await startMemoryPlatform({
        jobs: [{ spec, run }],
        clock,
        ...(options.logs ? { logger: createLogger({ level: 'info', sink: options.logs }) } : { logLevel: 'silent' }),
        ...(options.visibilityTimeoutSeconds === undefined
          ? {}
          : { visibilityTimeoutSeconds: options.visibilityTimeoutSeconds }),
      });
      const orrery = createClient({ url: platform.url, jobs: { [spec.type]: spec as typeof fairSpec }, retry: false });
      return { p: platform, orrery, started, clock };
    },
  };
}
