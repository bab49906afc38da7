/**
 * The job types this deployment knows, schema only (no handler code), so the enqueue API
 * can validate payloads at enqueue time with a small bundle. Each handler file under
 * `functions/jobs/` imports its spec from here.
 */
import * as z from 'zod';
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
  payload: z.object({ failTimes: z.int().min(0).max(100) }).strict(),
  timeoutMs: 10_000,
  retry: { maxAttempts: 5, backoff: { kind: 'constant', delayMs: 1000 } },
});

/** `sleep`: waits `ms` milliseconds, honouring its abort signal. */
export const sleepJob = defineJobType({
  type: 'sleep',
  payload: z.object({ ms: z.int().min(0).max(800_000) }).strict(),
  timeoutMs: 60_000,
});

export const catalog = [echoJob, flakyJob, sleepJob] as const;
