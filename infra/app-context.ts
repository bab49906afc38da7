import { type Grant, readGrantsDocument } from '../shared/core/access';

/** The context key naming the app's admins: `-c orrery:admins=<arn>,<arn>`. */
export const ADMINS_CONTEXT_KEY = 'orrery:admins';
/** The context key granting callers scoped grants: `-c 'orrery:callers={"<arn>":[…]}'`, or an object in cdk.json. */
export const CALLERS_CONTEXT_KEY = 'orrery:callers';

/**
 * `orrery:admins` as given on the command line (ARNs separated by commas) or in cdk.json (the
 * same string, or a list of ARNs).
 *
 * @example
 * adminsFromContext('arn:aws:iam::123456789012:role/platform-team'); // ['arn:aws:iam::123456789012:role/platform-team']
 */
export function adminsFromContext(value: unknown): string[] {
  if (value === undefined) return [];
  const list = Array.isArray(value) ? value : typeof value === 'string' ? value.split(',') : undefined;
  if (!list?.every((arn) => typeof arn === 'string')) {
    throw new Error(`context ${ADMINS_CONTEXT_KEY} must be ARNs separated by commas (got ${JSON.stringify(value)})`);
  }
  return list.map((arn) => arn.trim()).filter((arn) => arn !== '');
}

/**
 * `orrery:callers`: IAM role or user ARNs, each mapped to its grants (shared/core/access.ts,
 * `Grant`), as a JSON string on the command line or an object in cdk.json. Checked here, so a
 * typo fails the synthesis, naming the caller and the grant.
 *
 * @example
 * callersFromContext('{"arn:aws:iam::123456789012:role/billing":[{"action":"enqueue","types":["send-invoice"]}]}');
 */
export function callersFromContext(value: unknown): Record<string, readonly Grant[]> {
  if (value === undefined) return {};
  const fail = (what: string): never => {
    throw new Error(
      `context ${CALLERS_CONTEXT_KEY} must map IAM role or user ARNs to lists of grants, ` +
        `like {"arn:aws:iam::123456789012:role/billing":[{"action":"enqueue","types":["send-invoice"]}]}: ${what}`,
    );
  };
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch {
      return fail('not JSON');
    }
  }
  return { ...readGrantsDocument({ v: 1, principals: parsed }, fail).principals };
}
