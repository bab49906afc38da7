import { GetParameterCommand, type SSMClient } from '@aws-sdk/client-ssm';
import { ACCESS_ACTIONS, CONTROL_ACTIONS, type Grant, type GrantsDocument, type GrantsSource } from '../core/access';
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
  const fail = (what: string): never => {
    throw new ConfigError(`${source} is not a grants document: ${what}`);
  };
  if (!isRecord(raw)) return fail('not an object');
  if (raw.v !== 1) fail(`version ${JSON.stringify(raw.v)} (this API reads version 1)`);
  if (!isRecord(raw.principals)) return fail('principals is not an object');
  const principals: Record<string, readonly Grant[]> = {};
  for (const [id, grants] of Object.entries(raw.principals)) {
    principals[id] = grantList(grants, `principals["${id}"]`, fail);
  }
  return {
    v: 1,
    principals,
    ...(raw.unlisted !== undefined ? { unlisted: grantList(raw.unlisted, 'unlisted', fail) } : {}),
  };
}

const GRANT_ACTIONS: readonly string[] = [...ACCESS_ACTIONS, 'admin'];

function grantList(value: unknown, at: string, fail: (what: string) => never): Grant[] {
  if (!Array.isArray(value)) return fail(`${at} is not a list`);
  return value.map((grant, i) => {
    if (!isRecord(grant) || typeof grant.action !== 'string' || !GRANT_ACTIONS.includes(grant.action)) {
      return fail(`${at}[${i}] has no known action (${GRANT_ACTIONS.join(', ')})`);
    }
    const types = grant.types;
    if (types !== undefined && !(Array.isArray(types) && types.every((t) => typeof t === 'string'))) {
      fail(`${at}[${i}].types is not a list of job types`);
    }
    const actions = grant.actions;
    if (
      actions !== undefined &&
      !(Array.isArray(actions) && actions.every((a) => (CONTROL_ACTIONS as readonly unknown[]).includes(a)))
    ) {
      fail(`${at}[${i}].actions is not a list of control actions (${CONTROL_ACTIONS.join(', ')})`);
    }
    return grant as unknown as Grant;
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
