import type { Context } from 'aws-lambda';
import { DynamoDebouncer } from '../aws/dynamo-debouncer';
import { DynamoEventWaits } from '../aws/dynamo-event-waits';
import { DynamoFlowSlots } from '../aws/dynamo-flow-slots';
import { DynamoJobControl } from '../aws/dynamo-job-control';
import { DynamoJobGraph } from '../aws/dynamo-job-graph';
import { DynamoJobIndex } from '../aws/dynamo-job-index';
import { DynamoJobStore } from '../aws/dynamo-job-store';
import { DynamoJournal } from '../aws/dynamo-journal';
import { DynamoPacer } from '../aws/dynamo-pacer';
import { DynamoRedriveLog } from '../aws/dynamo-redrive-log';
import { DynamoScheduleStore } from '../aws/dynamo-schedule-store';
import { payloadBlobs } from '../aws/s3-blob-store';
import { EventBridgeJobScheduler } from '../aws/scheduler-job-scheduler';
import { EventBridgeRecurringTrigger } from '../aws/scheduler-recurring-trigger';
import { SqsDeadLetterQueues } from '../aws/sqs-dead-letters';
import { SqsJobQueue } from '../aws/sqs-job-queue';
import { createSsmClient, SsmGrantsSource } from '../aws/ssm-grants-source';
import { traceClient } from '../aws/tracing';
import { ENV, type PlatformConfig } from '../config';
import type { GrantsSource } from '../core/access';
import type { BlobStore } from '../core/blobs';
import type { JobTypeSpec } from '../core/job-type';
import { ConfigError } from '../errors';
import { deployedConfig, invocation, type LambdaRuntime, once, startLambdaRuntime } from '../lambda/runtime';
import { type ApiHandler, createApiHandler } from './handler';

/** The API as Lambda calls it: the Function URL event and the invocation context. */
export type LambdaApiHandler = (event: Parameters<ApiHandler>[0], context?: Context) => ReturnType<ApiHandler>;

/**
 * The API's Lambda entry point: configuration from the environment, SDK clients from the
 * default chain, logger and metrics, and the grants (one SSM GetParameter), built once per
 * container on first use (see shared/lambda/runtime.ts); each invocation flushes its
 * metrics. A cold start that cannot load the grants fails, and the next call tries again.
 */
export function createLambdaApiHandler(catalog: readonly JobTypeSpec[]): LambdaApiHandler {
  const start = once(async () => {
    const runtime = await startLambdaRuntime();
    const { clients } = runtime;
    // The catalog's types, checked against the deployed ones by their digest (no call when equal).
    const [{ config }, grants] = await Promise.all([
      deployedConfig(
        runtime,
        catalog.map((spec) => spec.type),
      ),
      loadGrants(runtime),
    ]);
    const api = createApiHandler({
      config,
      catalog,
      store: new DynamoJobStore(clients.dynamo, config.tableName),
      queue: new SqsJobQueue(clients.sqs),
      scheduler: new EventBridgeJobScheduler(clients.scheduler, config.scheduleGroup, config.schedulerRoleArn),
      flow: new DynamoFlowSlots(clients.dynamo, config.tableName),
      pacer: new DynamoPacer(clients.dynamo, config.tableName),
      debouncer: new DynamoDebouncer(clients.dynamo, config.tableName),
      graph: new DynamoJobGraph(clients.dynamo, config.tableName),
      journal: new DynamoJournal(clients.dynamo, config.tableName),
      eventWaits: new DynamoEventWaits(clients.dynamo, config.tableName),
      controlPlane: {
        index: new DynamoJobIndex(clients.dynamo, config.tableName),
        control: new DynamoJobControl(clients.dynamo, config.tableName),
        deadLetters: new SqsDeadLetterQueues(clients.sqs),
        redrives: new DynamoRedriveLog(clients.dynamo, config.tableName),
      },
      schedules: {
        store: new DynamoScheduleStore(clients.dynamo, config.tableName),
        trigger: new EventBridgeRecurringTrigger(clients.scheduler, config.scheduleGroup, config.schedulerRoleArn),
      },
      ...blobsOf(config, runtime),
      logger: runtime.logger,
      metrics: runtime.metrics,
      // Who may do what: the grants read at cold start, for the API's access check.
      access: { grants },
    });
    return { runtime, api };
  });
  return async (event, context) => {
    const { runtime, api } = await start();
    return invocation(runtime, context, () => api(event));
  };
}

/**
 * The deployed grants, read once (at cold start) from the parameter `ORRERY_GRANTS_PARAMETER`
 * names, and kept for the container's life. A deploy that changes the grants also changes the
 * function's description (it carries the grants' digest, infra/constructs/enqueue-api.ts), so
 * Lambda serves the next calls from new containers, which read the new grants.
 */
async function loadGrants(runtime: LambdaRuntime): Promise<GrantsSource> {
  const name = grantsParameterOf(runtime.config);
  const ssm = createSsmClient();
  if (runtime.config.tracing) await traceClient(ssm);
  const started = performance.now();
  try {
    const document = await new SsmGrantsSource(ssm, name).load();
    runtime.logger.info('grants loaded', {
      parameter: name,
      principals: Object.keys(document.principals).length,
      ms: Math.round(performance.now() - started),
    });
    return { load: () => Promise.resolve(document) };
  } finally {
    ssm.destroy();
  }
}

function grantsParameterOf(config: PlatformConfig): string {
  if (!config.grantsParameter) {
    throw new ConfigError(
      `environment variable ${ENV.grantsParameter} is not set: the API reads who may do what from the SSM ` +
        'parameter it names (JobPlatform sets it)',
    );
  }
  return config.grantsParameter;
}

/** The payload bucket's store, when the deployment has one. */
function blobsOf(config: LambdaRuntime['config'], runtime: LambdaRuntime): { blobs?: BlobStore } {
  const blobs = payloadBlobs(config, runtime.clients);
  return blobs ? { blobs } : {};
}
