/**
 * The job types this deployment knows, schema only (no handler code), so the enqueue API
 * can validate payloads at enqueue time with a small bundle. Each handler file under
 * `functions/jobs/` imports its spec from here. The schemas use `zod/mini`: every worker loads
 * them all, and full `zod` would add a good part to its cold start (either flavour works).
 */
import * as z from 'zod/mini';
import { defineJobType } from '../../shared/core/job-type';

/** `echo`: any JSON object; the result is the payload. */
export const echoJob = defineJobType({
  type: 'echo',
  payload: z.record(z.string(), z.unknown()),
  timeoutMs: 10_000,
});

/** `flaky`: fails its first `failTimes` attempts, then succeeds. */
export const flakyJob = defineJobType({
  type: 'flaky',
  payload: z.strictObject({ failTimes: z.int().check(z.minimum(0), z.maximum(100)) }),
  timeoutMs: 10_000,
  retry: { maxAttempts: 5, backoff: { kind: 'constant', delayMs: 1000 } },
});

/** `sleep`: waits `ms` milliseconds, honouring its abort signal. */
export const sleepJob = defineJobType({
  type: 'sleep',
  payload: z.strictObject({ ms: z.int().check(z.minimum(0), z.maximum(800_000)) }),
  timeoutMs: 60_000,
});

export const catalog = [echoJob, flakyJob, sleepJob] as const;
