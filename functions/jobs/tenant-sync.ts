import { setTimeout as delay } from 'node:timers/promises';
import { defineJob } from '../../shared/runtime/define-job';
import { tenantSyncJob } from './catalog';

/** Syncs a tenant (here: waits `ms`, 1 s by default); at most 2 per tenant run at once. */
export const tenantSync = defineJob(tenantSyncJob, async ({ tenantId, ms }, ctx) => {
  await delay(ms ?? 1000, undefined, { signal: ctx.signal });
  return { tenantId, syncedAt: new Date().toISOString() };
});
export const handler = tenantSync.handler;
