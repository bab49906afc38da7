import { defineJob } from '../../shared/runtime/define-job';
import { reindexJob } from './catalog';

/** Rebuilds a catalog's search index (here: logs it); a burst of changes makes one run, with the last payload. */
export const reindex = defineJob(reindexJob, async ({ catalogId, change }, ctx) => {
  ctx.log.info('reindexing', { catalogId, lastChange: change });
  return { catalogId, reindexedAt: new Date().toISOString() };
});
export const handler = reindex.handler;
