import { defineJob } from '../../shared/runtime/define-job';
import { flakyJob } from './catalog';

/** Fails attempts 1..failTimes, then succeeds on attempt failTimes + 1. */
export const flaky = defineJob(flakyJob, async ({ failTimes }, ctx) => {
  if (ctx.attempt <= failTimes) {
    throw new Error(`flaky: attempt ${ctx.attempt} of ${failTimes} planned failures`);
  }
  return { succeededOnAttempt: ctx.attempt };
});
export const handler = flaky.handler;
