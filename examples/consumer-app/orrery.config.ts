/** The job types `orrery dev` (`npm run dev`) runs locally: every handler of this app. */
import { collectPayment } from './jobs/collect-payment.ts';
import { invoice } from './jobs/invoice.ts';

export default { jobs: [invoice, collectPayment] };
