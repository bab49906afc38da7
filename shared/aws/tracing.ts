import { ENV } from '../config';
import { ConfigError } from '../errors';
import type { AwsClients } from './clients';

/**
 * Captures the clients with Powertools for AWS Lambda's Tracer: each AWS request becomes an X-Ray
 * subsegment of the invocation's trace (Lambda active tracing makes the segment). The Tracer and
 * the X-Ray SDK it loads are imported only here, when tracing is on, so a function without
 * tracing does not pay for loading them at cold start; JobPlatform leaves them out of such a
 * function's bundle (see infra/constructs/orrery-function.ts). Outside Lambda the Tracer is off
 * and the clients are left as they are.
 *
 * @example
 * if (config.tracing) await traceClients(clients);
 */
export async function traceClients(clients: AwsClients): Promise<void> {
  await traceClient(clients.dynamo, clients.sqs, clients.scheduler);
}

/** Captures each of `clients` as {@link traceClients} does (a client built apart, e.g. the API's SSM client). */
export async function traceClient(...clients: Parameters<TracerInstance['captureAWSv3Client']>[0][]): Promise<void> {
  const { Tracer } = await import('@aws-lambda-powertools/tracer').catch((error: unknown) => {
    throw new ConfigError(
      `${ENV.tracing} is true, but this function was bundled without the Powertools Tracer ` +
        `(JobPlatform bundles it only with \`tracing: true\`): ${error instanceof Error ? error.message : String(error)}`,
    );
  });
  const tracer = new Tracer({ serviceName: 'orrery' });
  for (const client of clients) tracer.captureAWSv3Client(client);
}

type TracerInstance = import('@aws-lambda-powertools/tracer').Tracer;
