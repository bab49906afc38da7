import { Token, Tokenization } from 'aws-cdk-lib';

/**
 * Lambda's quota on a function's environment: all its variables together, keys and values,
 * at most 4 KB (a hard quota: CreateFunction and UpdateFunctionConfiguration fail past it).
 */
export const LAMBDA_ENVIRONMENT_BYTES = 4096;

/**
 * Bytes a value CloudFormation resolves only at deploy time (a `Ref`, an ARN, a joined URL) is
 * counted as when an environment is checked at synthesis. Generated names and ARNs are shorter
 * in practice (a role's or a secret's ARN is about 100); Orrery's own four such values resolve to
 * less than 4 × 128 even with names as long as AWS makes them (test/infra/worker-config.test.ts).
 */
export const UNRESOLVED_VALUE_BYTES = 128;

/** The size of an environment as Lambda counts it: the UTF-8 bytes of the JSON of its variables. */
export function environmentBytes(variables: Readonly<Record<string, string>>): number {
  return Buffer.byteLength(JSON.stringify(variables), 'utf8');
}

/**
 * {@link environmentBytes} of an environment whose values may still hold tokens: the literal
 * text counts as it is, each token as {@link UNRESOLVED_VALUE_BYTES}.
 */
export function estimatedEnvironmentBytes(variables: Readonly<Record<string, string>>): number {
  return environmentBytes(
    Object.fromEntries(Object.entries(variables).map(([name, value]) => [name, estimate(value)])),
  );
}

function estimate(value: string): string {
  if (!Token.isUnresolved(value)) return value;
  const placeholder = 'x'.repeat(UNRESOLVED_VALUE_BYTES);
  return Tokenization.reverseString(value)
    .mapTokens({ mapToken: () => placeholder })
    .join({ join: (left, right) => `${left ?? ''}${right ?? ''}` });
}

/**
 * Throws when `variables`, as {@link estimatedEnvironmentBytes} counts them, exceed
 * {@link LAMBDA_ENVIRONMENT_BYTES}; the message names `owner` and the largest variables.
 */
export function checkEnvironmentSize(owner: string, variables: Readonly<Record<string, string>>): void {
  const bytes = estimatedEnvironmentBytes(variables);
  if (bytes <= LAMBDA_ENVIRONMENT_BYTES) return;
  const largest = Object.keys(variables)
    .map((name) => ({ name, bytes: estimatedEnvironmentBytes({ [name]: variables[name] ?? '' }) }))
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, 3)
    .map((v) => `${v.name} (${v.bytes} bytes)`);
  throw new Error(
    `${owner}: the environment variables take about ${bytes} bytes together (keys and values as JSON, ` +
      `each value resolved at deploy time counted as ${UNRESOLVED_VALUE_BYTES}); Lambda allows ` +
      `${LAMBDA_ENVIRONMENT_BYTES}. Largest: ${largest.join(', ')}`,
  );
}
