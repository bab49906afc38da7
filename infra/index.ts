/**
 * `orrery-jobs/cdk`: the {@link JobPlatform} construct for your own CDK app, and
 * {@link orreryApp}, an `App` that `cdk synth -c orrery:bundling=false` synthesizes without
 * bundling (templates only, for checks and diffs; never to deploy).
 *
 * @example
 * import { JobPlatform } from 'orrery-jobs/cdk';
 * import { invoiceJob } from '../jobs/catalog';
 *
 * const platform = new JobPlatform(this, 'Jobs', { apiEntry: 'jobs/api.ts' });
 * const invoices = platform.addJobType({
 *   spec: invoiceJob,
 *   entry: 'jobs/invoice.ts',
 *   concurrency: 10,
 *   memorySize: 1024,
 *   environment: { INVOICE_BUCKET: bucket.bucketName, PDF_API_KEY_ARN: apiKey.secretArn },
 * });
 * bucket.grantReadWrite(invoices.worker); // the invoice worker's role only
 * apiKey.grantRead(invoices.worker);
 * platform.grantEnqueue(backendRole, { types: ['invoice'] }); // enqueue invoices, nothing else
 * platform.grantAdmin(platformTeamRole); // the dashboard and the CLI
 *
 * @module
 */
export type { ApiGrants, ApiGrantsProps } from './constructs/api-grants';
export type { EnqueueApi, EnqueueApiProps } from './constructs/enqueue-api';
export {
  type ControlGrantOptions,
  JobPlatform,
  type JobPlatformProps,
  type JobTypeInfo,
  type JobTypeOptions,
  type JobTypeResources,
  type TypeScopedGrantOptions,
} from './constructs/job-platform';
export type { JobQueue, JobQueueProps } from './constructs/job-queue';
export type { JobTable, JobTableProps } from './constructs/job-table';
export type { JobWorker, JobWorkerProps } from './constructs/job-worker';
export type { OrreryFunction, OrreryFunctionProps } from './constructs/orrery-function';
export type { ScheduleAccess, SchedulerAccess, SchedulerAccessProps } from './constructs/scheduler-access';
export type { Supervisor, SupervisorProps } from './constructs/supervisor';
export { BUNDLING_CONTEXT_KEY, orreryApp } from './orrery-app';
