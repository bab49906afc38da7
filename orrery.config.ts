/**
 * The job types `orrery dev` runs in this repository (and `npm run dev`, which is the same command):
 * the examples under functions/jobs/. An app's own `orrery.config.ts` looks the same.
 */
import { accountSync } from './functions/jobs/account-sync';
import { apiCall } from './functions/jobs/api-call';
import { awaitParcel } from './functions/jobs/await-parcel';
import { echo } from './functions/jobs/echo';
import { flaky } from './functions/jobs/flaky';
import { fulfilOrder } from './functions/jobs/fulfil-order';
import { packItem } from './functions/jobs/pack-item';
import { priceItem } from './functions/jobs/price-item';
import { quoteOrder } from './functions/jobs/quote-order';
import { reindex } from './functions/jobs/reindex';
import { sendReceipt } from './functions/jobs/send-receipt';
import { shipOrder } from './functions/jobs/ship-order';
import { shipParcel } from './functions/jobs/ship-parcel';
import { sleep } from './functions/jobs/sleep';
import { tenantSync } from './functions/jobs/tenant-sync';
import { welcomeEmail } from './functions/jobs/welcome-email';

export default {
  jobs: [
    echo,
    flaky,
    sleep,
    tenantSync,
    apiCall,
    accountSync,
    welcomeEmail,
    reindex,
    fulfilOrder,
    packItem,
    shipOrder,
    // composition (docs/workflows.md): an invoke and its children, an event waited for and the
    // job that emits it, a batch handler
    quoteOrder,
    priceItem,
    awaitParcel,
    shipParcel,
    sendReceipt,
  ],
};
