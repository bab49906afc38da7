import { defineJob } from '../../shared/runtime/define-job';
import { echoJob } from './catalog';

/** Returns its payload as the job's result. */
export const echo = defineJob(echoJob, async (payload) => payload);
export const handler = echo.handler;
