import { setTimeout as delay } from 'node:timers/promises';
import { defineJob } from '../../shared/runtime/define-job';
import { accountSyncJob } from './catalog';

/** Syncs an account (here: waits `ms`, 5 s by default); a newer sync of the account cancels this one. */
export const accountSync = defineJob(accountSyncJob, async ({ accountId, ms }, ctx) => {
  await delay(ms ?? 5000, undefined, { signal: ctx.signal });
  return { accountId, syncedAt: new Date().toISOString() };
});
export const handler = accountSync.handler;
