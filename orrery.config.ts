/**
 * The job types `orrery dev` runs in this repository (and `npm run dev`, which is the same command):
 * the examples under functions/jobs/. An app's own `orrery.config.ts` looks the same.
 */
import { accountSync } from './functions/jobs/account-sync';
import { apiCall } from './functions/jobs/api-call';
import { echo } from './functions/jobs/echo';
import { flaky } from './functions/jobs/flaky';
import { fulfilOrder } from './functions/jobs/fulfil-order';
import { packItem } from './functions/jobs/pack-item';
import { reindex } from './functions/jobs/reindex';
import { shipOrder } from './functions/jobs/ship-order';
import { sleep } from './functions/jobs/sleep';
import { tenantSync } from './functions/jobs/tenant-sync';
import { welcomeEmail } from './functions/jobs/welcome-email';

export default {
  jobs: [echo, flaky, sleep, tenantSync, apiCall, accountSync, welcomeEmail, reindex, fulfilOrder, packItem, shipOrder],
};
