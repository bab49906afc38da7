import { setTimeout as delay } from 'node:timers/promises';
import { defineJob } from '../../shared/runtime/define-job';
import { sleepJob } from './catalog';

/** Waits `ms` milliseconds; stops early (and fails the attempt) when its signal aborts. */
export const sleep = defineJob(sleepJob, async ({ ms }, ctx) => {
  await delay(ms, undefined, { signal: ctx.signal });
  return { sleptMs: ms };
});
export const handler = sleep.handler;
