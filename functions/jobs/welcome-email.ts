import { defineJob } from '../../shared/runtime/define-job';
import { welcomeEmailJob } from './catalog';

/** Sends a welcome email (here: logs it); the rate limit drops repeats within the hour. */
export const welcomeEmail = defineJob(welcomeEmailJob, async ({ userId }, ctx) => {
  ctx.log.info('sending the welcome email', { userId });
  return { sent: true };
});
export const handler = welcomeEmail.handler;
