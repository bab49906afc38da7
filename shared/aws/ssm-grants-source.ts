import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { type GrantsDocument, type GrantsSource, readGrantsDocument } from '../core/access';
import { ConfigError } from '../errors';
import { awsErrorName, translateAwsError } from './errors';

/**
 * The grants as JobPlatform deploys them: one SSM String parameter whose value is a
 * {@link GrantsDocument} (infra/constructs/api-grants.ts), read with one GetParameter.
 *
 * Errors: a missing parameter, one this function may not read, and a value that is not a grants
 * document are {@link ConfigError}s naming the parameter (a deployment fault: no retry helps);
 * throttling and AWS faults are translated as every adapter's (`ThrottledError`,
 * `DependencyError`). It does not cache: the API loads it once per container.
 *
 * @example
 * const grants = await new SsmGrantsSource(createSsmClient(), config.grantsParameter).load();
 */
export class SsmGrantsSource implements GrantsSource {
  constructor(
    private readonly client: SSMClient,
    readonly parameterName: string,
  ) {}

  async load(): Promise<GrantsDocument> {
    let value: string | undefined;
    try {
      const answer = await this.client.send(new GetParameterCommand({ Name: this.parameterName }));
      value = answer.Parameter?.Value;
    } catch (error) {
      const name = awsErrorName(error);
      if (name === 'ParameterNotFound') {
        throw new ConfigError(
          `the grants parameter ${this.parameterName} does not exist: JobPlatform writes it at deploy time, and ` +
            'ORRERY_GRANTS_PARAMETER names it',
        );
      }
      if (name === 'AccessDeniedException' || name === 'AccessDenied') {
        throw new ConfigError(
          `this function may not read the grants parameter ${this.parameterName} (ssm:GetParameter): ` +
            `${(error as Error).message}`,
        );
      }
      translateAwsError(error, `SSM GetParameter ${this.parameterName}`);
    }
    if (value === undefined) throw new ConfigError(`the grants parameter ${this.parameterName} has no value`);
    return parseGrantsDocument(value, `the grants parameter ${this.parameterName}`);
  }
}

/**
 * Reads a grants document from its JSON text, checking its shape (version 1, known actions,
 * lists of types); throws a {@link ConfigError} that names `source` and the first fault.
 *
 * @example
 * parseGrantsDocument('{"v":1,"principals":{}}', 'the grants parameter x'); // { v: 1, principals: {} }
 */
export function parseGrantsDocument(text: string, source: string): GrantsDocument {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${source} is not JSON: ${(error as Error).message}`);
  }
  return readGrantsDocument(raw, (what) => {
    throw new ConfigError(`${source} is not a grants document: ${what}`);
  });
}

/**
 * The SSM client the API reads its grants with, built from the
 * default configuration chain as `createAwsClients` (clients.ts) builds the others: locally it is
 * routed by `AWS_ENDPOINT_URL_SSM` alone. Not one of `AwsClients`, and in this module rather than clients.ts: only the API
 * uses it, once per container, so no other function's bundle imports the SSM client.
 *
 * @example
 * const ssm = createSsmClient();
 */
export function createSsmClient(): SSMClient {
  return new SSMClient({});
}
