import { type ApiAccess, accessFrom, allowEveryone } from '../../shared/api/access';
import { type GrantsDocument, principalId } from '../../shared/core/access';
import { LOCAL_CREDENTIALS } from './clients';
import { type FunctionUrlServerOptions, LOCAL_USER_ARN, type LocalCaller } from './function-url';

/** Who may call a local platform's API (its Function URL and its grants). */
export interface LocalAccessOptions {
  /**
   * The grants, as the construct deploys them. The default local credentials
   * ({@link LOCAL_CREDENTIALS}, signing as {@link LOCAL_USER_ARN}) stay `admin` unless the
   * document lists that principal, so an admin client can always set up and read back. With a
   * document, the Function URL takes `AWS_IAM` auth and verifies every signature: an unsigned
   * request answers 403 there, as on AWS.
   * @default every caller, signed or not, is admin (`allowEveryone()`)
   */
  grants?: GrantsDocument;
  /**
   * Local credentials mapped to identities (assumed roles with a session, users). Giving any
   * also turns on `AWS_IAM` auth. @default none
   */
  callers?: readonly LocalCaller[];
}

/** The API's `access` and the Function URL options a local platform runs with. */
export function localAccess(options: LocalAccessOptions): {
  access: ApiAccess;
  functionUrl: Pick<FunctionUrlServerOptions, 'authType' | 'secrets' | 'callers'>;
} {
  if (!options.grants && !options.callers?.length) return { access: allowEveryone(), functionUrl: {} };
  const grants = options.grants ?? { v: 1, principals: {}, unlisted: [{ action: 'admin' }] };
  const local = principalId(LOCAL_USER_ARN) ?? LOCAL_USER_ARN;
  const document: GrantsDocument = grants.principals[local]
    ? grants
    : { ...grants, principals: { ...grants.principals, [local]: [{ action: 'admin' }] } };
  return {
    access: accessFrom(document),
    functionUrl: {
      authType: 'AWS_IAM',
      secrets: { [LOCAL_CREDENTIALS.accessKeyId]: LOCAL_CREDENTIALS.secretAccessKey },
      callers: options.callers ?? [],
    },
  };
}

/**
 * A local caller signing as the role `role` in a session named `session`, with credentials of its
 * own (`<role>-key` / `<role>-secret`).
 *
 * @example
 * const billing = assumedRole('billing'); // arn:aws:sts::000000000000:assumed-role/billing/local
 */
export function assumedRole(role: string, session = 'local'): LocalCaller {
  return {
    accessKeyId: `${role}-key`,
    secretAccessKey: `${role}-secret`,
    arn: LOCAL_USER_ARN.replace(/:iam::(\d{12}):user\/local$/, `:sts::$1:assumed-role/${role}/${session}`),
  };
}

/** The grant key of a local role (`arn:aws:iam::000000000000:role/<role>`), for a GrantsDocument. */
export function localRoleId(role: string): string {
  return LOCAL_USER_ARN.replace(/user\/local$/, `role/${role}`);
}
