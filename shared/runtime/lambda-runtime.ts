import type { Context } from 'aws-lambda';
import { type AwsClients, createAwsClients } from '../aws/clients';
import { PowertoolsMetrics } from '../aws/powertools-metrics';
import { traceClients } from '../aws/tracing';
import { type PlatformConfig, platformConfigFromEnv } from '../config';
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
export async function startLambdaRuntime(options: { meterCost?: boolean } = {}): Promise<LambdaRuntime> {
  const config = platformConfigFromEnv();
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
