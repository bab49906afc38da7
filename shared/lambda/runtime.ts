import type { Context } from 'aws-lambda';
import { type AwsClients, createAwsClients } from '../aws/clients';
import { PowertoolsMetrics } from '../aws/powertools-metrics';
import { listDeployedTypes } from '../aws/sqs-queue-lister';
import { traceClients } from '../aws/tracing';
import { type PlatformConfig, platformConfigFromEnv, typesDigest, withTypes } from '../config';
import { createLogger, type RootLogger } from '../logger';
import { CostMeter } from './cost-meter';

/** What a Lambda entry point builds once per container: configuration, clients, logger, metrics. */
export interface LambdaRuntime {
  config: PlatformConfig;
  clients: AwsClients;
  logger: RootLogger;
  metrics: PowertoolsMetrics;
  /** Present when built with `meterCost`: the clients report every request to it. */
  meter?: CostMeter;
}

/**
 * Builds the runtime of a Lambda entry point from the environment: the configuration, the SDK
 * clients (metered for job cost with `meterCost`, captured by the Powertools Tracer when
 * `ORRERY_TRACING` is on), a Powertools-backed logger and Powertools EMF metrics.
 *
 * @example
 * const runtime = await startLambdaRuntime({ meterCost: true });
 */
export async function startLambdaRuntime(
  options: { meterCost?: boolean; types?: readonly string[] } = {},
): Promise<LambdaRuntime> {
  const config = platformConfigFromEnv(process.env, options.types ?? []);
  const meter = options.meterCost ? new CostMeter() : undefined;
  const clients = createAwsClients(meter ? { cost: meter } : {});
  if (config.tracing) await traceClients(clients);
  return {
    config,
    clients,
    logger: createLogger({ level: config.logLevel }),
    metrics: new PowertoolsMetrics(config.metricsNamespace),
    ...(meter ? { meter } : {}),
  };
}

/**
 * Runs one invocation: the Lambda context goes on the log lines, and the metrics it recorded are
 * flushed when it ends, whether it returned or threw.
 */
export async function invocation<T>(
  runtime: LambdaRuntime,
  context: Context | undefined,
  fn: () => Promise<T>,
): Promise<T> {
  if (context) runtime.logger.addContext(context);
  try {
    return await fn();
  } finally {
    runtime.metrics.flush();
  }
}

/**
 * Builds a value on first use, once, even when called again while the first build runs; a build
 * that fails is tried again on the next call.
 */
export function once<T>(build: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => {
    pending ??= build().catch((error: unknown) => {
      pending = undefined;
      throw error;
    });
    return pending;
  };
}

/**
 * The configuration with routes for the deployed job types, found without a list of them in
 * the environment (which would grow past Lambda's 4 KB):
 * - with `candidates` (the API's catalog) whose digest is the deployed one: those, at no cost;
 * - otherwise the types whose ready queue exists (one ListQueues call), intersected with the
 *   candidates when given. A catalog that differs from what was deployed is logged as an error
 *   naming the difference, and only its deployed types are served.
 *
 * `settled` is false when the listing's digest is not the deployed one (a queue created or
 * deleted a moment ago, as ListQueues is eventually consistent): the caller lists again later.
 */
export async function deployedConfig(
  runtime: Pick<LambdaRuntime, 'config' | 'clients' | 'logger'>,
  candidates?: readonly string[],
): Promise<{ config: PlatformConfig; settled: boolean }> {
  const { config } = runtime;
  const expected = config.typesDigest;
  if (candidates && (expected === undefined || typesDigest(candidates) === expected)) {
    return { config: withTypes(config, candidates), settled: true };
  }
  const prefix = config.queues?.prefix;
  if (!prefix) return { config: withTypes(config, candidates ?? []), settled: true };
  const listed = await listDeployedTypes(runtime.clients.sqs, prefix);
  const settled = expected === undefined || typesDigest(listed) === expected;
  if (!settled) {
    runtime.logger.warn('the listed ready queues are not the deployed job types (a deploy in progress?)', {
      listed: listed.length,
      deployed: expected,
    });
  }
  if (!candidates) return { config: withTypes(config, listed), settled };
  const deployed = new Set(listed);
  runtime.logger.error("the API's catalog is not the set of deployed job types: add each type with addJobType", {
    notDeployed: candidates.filter((type) => !deployed.has(type)),
    notInCatalog: listed.filter((type) => !candidates.includes(type)),
  });
  return {
    config: withTypes(
      config,
      candidates.filter((type) => deployed.has(type)),
    ),
    settled,
  };
}
