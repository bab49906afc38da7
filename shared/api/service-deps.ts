import type { PlatformConfig } from '../config';
import type { Clock } from '../core/clock';
import type { JobTypeSpec } from '../core/job-type';
import type { JobQueue, JobScheduler, JobStore } from '../core/ports';
import type { Logger } from '../logger';

/** What every API service is built with: the deployment, its job types, the job table, the queues and the scheduler. */
export interface ApiServiceDeps {
  config: PlatformConfig;
  catalog: readonly JobTypeSpec[];
  store: JobStore;
  queue: JobQueue;
  scheduler: JobScheduler;
  clock: Clock;
  log: Logger;
}
