import { defineJob } from '../../shared/runtime/define-job';
import { apiCallJob } from './catalog';

/** Calls a downstream API (here: records when); the throttle keeps it to 5 a second per API key. */
export const apiCall = defineJob(apiCallJob, async ({ path }, ctx) => {
  ctx.log.info('calling the downstream API', { path });
  return { path, calledAt: new Date().toISOString() };
});
export const handler = apiCall.handler;
