/**
 * IAM proven from the calls (issue 23, item 4). After the `deployed` run, every AWS call a
 * function made (its code, or the event source mapping polling for it, both with the function's
 * role) is evaluated with `@cloud-copilot/iam-simulate` (AGPL-3.0, a test-only devDependency)
 * against the role's policies as deployed, plus the queue's resource policy for an SQS call on a
 * queue. Then every statement of every role, split into action × resource, is either used by a
 * call, or has a verdict: the same statement is used by another role of its kind (a worker whose
 * type ran no such path), or an entry in iam-justifications.ts says why no call used it.
 *
 * The run fails (global-setup.ts teardown) on: a denied call, a call that cannot be evaluated
 * (no mapping to IAM actions, no role, a policy the simulator rejects), an unused statement
 * without a justification, and a justification for a statement no role has.
 *
 * Request context: `aws:SecureTransport` = true (the functions call AWS over HTTPS; the queues'
 * enforce-SSL policies deny anything else), `aws:PrincipalArn` (the role), `aws:PrincipalAccount`,
 * `aws:RequestedRegion`, `iam:PassedToService` for the role a schedule is given, and
 * `dynamodb:LeadingKeys` for a DynamoDB request on items (below).
 *
 * `dynamodb:LeadingKeys` is the partition key of the items a request names, a multivalued key
 * (DynamoDB Developer Guide, "Using IAM policy conditions for fine-grained access control",
 * table "Specifying conditions: Using condition keys",
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html#FGAC_DDB.ConditionKeys:
 * it stands for the table's first key attribute, the partition key; it is plural even for a
 * single-item action, and a condition on it takes `ForAllValues`). A `ForAllValues:` condition
 * holds when the key is absent, so without it a grant limited to some partitions would allow a
 * request on any. Each request carries the partition key values it names: a Query's, from the
 * equality on the partition key in its key condition; GetItem, PutItem, UpdateItem, DeleteItem
 * the key's (or item's) `pk`; BatchGetItem / BatchWriteItem each key of the items on that table;
 * a transaction's item its own. The recording proxy reads them from the request
 * (recording-proxy.ts); a call of those actions whose partition key was not recorded is not
 * evaluated (it fails the run) rather than allowed for want of the key. Scan names no partition
 * and the Service Authorization Reference lists no LeadingKeys for it. A Query on an index
 * carries the index's partition key value (the only one it names; the guide defines the key for
 * tables, and no policy of ours conditions an index query on it). The simulator takes the values
 * as an array (`Record<string, string | string[]>`; `ArrayOfString` keys such as this one are
 * evaluated value by value under `ForAllValues` / `ForAnyValue`).
 *
 * How an API call maps to the IAM actions AWS authorizes (sources):
 * - DynamoDB BatchGetItem / BatchWriteItem: `dynamodb:BatchGetItem` / `dynamodb:BatchWriteItem`
 *   on each table of the request (Service Authorization Reference, "Actions, resources, and
 *   condition keys for Amazon DynamoDB": both are actions on the `table` resource).
 * - DynamoDB TransactWriteItems / TransactGetItems: the action of each item (`Put` → PutItem,
 *   `Update` → UpdateItem, `Delete` → DeleteItem, `ConditionCheck` → ConditionCheckItem, `Get` →
 *   GetItem) on that item's table ("Using IAM with DynamoDB transactions", DynamoDB Developer
 *   Guide: "Permissions for Put, Update, Delete, and Get actions are governed by the permissions
 *   used for the underlying PutItem, UpdateItem, DeleteItem, and GetItem operations. For the
 *   ConditionCheck action, you can use the dynamodb:ConditionCheckItem permission").
 * - DynamoDB item actions (GetItem, PutItem, ...) authorize on the table ARN; only Query and Scan
 *   take an index ARN (Service Authorization Reference, DynamoDB), so a statement's item actions
 *   on an index ARN can be used by no call and are listed as not applicable.
 * - SQS SendMessageBatch → `sqs:SendMessage`, DeleteMessageBatch → `sqs:DeleteMessage`,
 *   ChangeMessageVisibilityBatch → `sqs:ChangeMessageVisibility` ("Amazon SQS batch actions",
 *   SQS Developer Guide: batch actions have no permissions of their own; the single action's
 *   permission covers them). StartMessageMoveTask → `sqs:StartMessageMoveTask`,
 *   `sqs:ReceiveMessage`, `sqs:DeleteMessage`, `sqs:GetQueueAttributes` on the source (the DLQ)
 *   and `sqs:SendMessage` on the destination ("Amazon SQS API permissions: Actions and resource
 *   reference"). ListQueues has no resource-level permission (resource `*`).
 * - Scheduler CreateSchedule / UpdateSchedule: the action on the schedule ARN, and `iam:PassRole`
 *   on the target's RoleArn with `iam:PassedToService` = `scheduler.amazonaws.com` ("Using
 *   identity-based policies in EventBridge Scheduler", and the AmazonEventBridgeSchedulerFullAccess
 *   managed policy, which grants PassRole with exactly that condition; IAM User Guide, "Grant a
 *   user permissions to pass a role to an AWS service"). ListSchedules takes no resource.
 * - The event source mapping's own calls use the function's execution role ("Creating and
 *   configuring an Amazon SQS event source mapping", Lambda Developer Guide: the role needs
 *   sqs:ReceiveMessage, sqs:DeleteMessage and sqs:GetQueueAttributes).
 */
import { runSimulation, type Simulation } from '@cloud-copilot/iam-simulate';
import { ENV } from '../../shared/config';
import type { FunctionConfiguration, RolePolicies } from './aws-api';
import type { DeployedApp } from './deploy';
import { type Justification, UNUSED_STATEMENT_VERDICTS } from './iam-justifications';
import type { AwsCallRecord, Principal } from './recording-proxy';

export type RoleKind = 'api' | 'worker' | 'supervisor' | 'function';

/** One authorization AWS makes for a call: an IAM action on a resource, with its context. */
export interface IamRequest {
  action: string;
  resource: string;
  /** Context keys beyond the ones every request carries (a multivalued key as an array). */
  context?: Record<string, string | string[]>;
  /** What part of the call this is (a transaction's item, the role a schedule is given). */
  part?: string;
}

/** One line of a role's policy: an action × a resource of an Allow statement. */
export interface Grant {
  roleArn: string;
  kind: RoleKind;
  /** The function's logical id (its type, for a worker). */
  functionId: string;
  type?: string;
  policy: string;
  /** 1-based index of the statement in its policy. */
  statement: number;
  action: string;
  resource: string;
  /** The resource in words, as the justifications name it (`table`, `ready queues`, `own ready queue`...). */
  label: string;
  /** `<kind> <action> <label>`, the justifications' key. */
  key: string;
  condition?: unknown;
  /** Calls (requests) this line allowed. */
  uses: number;
  /** Concrete resources it allowed (for a pattern). */
  matched: Set<string>;
  /** For an unused line: why (a justification, another role's use, or not applicable). */
  verdict?: { source: 'justification' | 'same-kind' | 'not-applicable'; text: string; fate: string };
}

/** A request that was not allowed, or could not be evaluated. */
export interface IamDenial {
  function: string;
  via: string;
  kind: RoleKind | 'unknown';
  call: string;
  action: string;
  resource: string;
  context: Record<string, string | string[]>;
  result: string;
  /** What would allow it, or why it could not be evaluated. */
  missing: string;
  count: number;
}

export interface IamProof {
  simulator: string;
  /** Calls by each kind of principal. */
  calls: {
    evaluated: number;
    requests: number;
    distinctRequests: number;
    notEvaluated: Record<string, number>;
    /** DynamoDB requests evaluated with `dynamodb:LeadingKeys`, by IAM action. */
    leadingKeys: Record<string, number>;
  };
  /** SQS requests on a queue, and how many had a queue policy to evaluate with. */
  queuePolicies: { requests: number; withPolicy: number; policies: number; queuesWithout: string[] };
  roles: { roleArn: string; kind: RoleKind; functionId: string; type?: string; calls: number }[];
  grants: Grant[];
  denied: IamDenial[];
  /** Unused lines with no verdict. */
  unjustified: Grant[];
  /** Justification entries that match no line of any role. */
  staleJustifications: string[];
  /** Justification entries whose lines were all used in this run (kept for runs that do not take that path). */
  idleJustifications: string[];
}

export interface IamProofInput {
  calls: readonly AwsCallRecord[];
  /** Access key id → principal (the proxy's registry). */
  principals: ReadonlyMap<string, Principal>;
  app: Pick<DeployedApp, 'functions' | 'roles' | 'queuePolicies' | 'mappings' | 'functionUrls' | 'rules'>;
  account: string;
  /** The justifications to apply. @default UNUSED_STATEMENT_VERDICTS */
  justifications?: Readonly<Record<string, Justification>>;
  /** The simulator's name and version, for the report. */
  simulator?: string;
}

/** Principals whose calls are the harness's or the tests' own, not a function's: not evaluated. */
const NOT_EVALUATED_VIA = new Set<Principal['via']>(['caller', 'harness']);

const SQS_BATCH: Record<string, string> = {
  SendMessageBatch: 'SendMessage',
  DeleteMessageBatch: 'DeleteMessage',
  ChangeMessageVisibilityBatch: 'ChangeMessageVisibility',
};
const TRANSACT_ITEM: Record<string, string> = {
  Put: 'PutItem',
  Update: 'UpdateItem',
  Delete: 'DeleteItem',
  ConditionCheck: 'ConditionCheckItem',
  Get: 'GetItem',
};
/** Actions that take no resource (resource `*`). */
const WILDCARD_ONLY = new Set([
  'sqs:ListQueues',
  'scheduler:ListSchedules',
  'scheduler:ListScheduleGroups',
  'dynamodb:ListTables',
]);
/** DynamoDB actions that take an index ARN; the other item actions authorize on the table. */
const DYNAMODB_INDEX_ACTIONS = new Set(['dynamodb:Query', 'dynamodb:Scan']);
const LEADING_KEYS = 'dynamodb:LeadingKeys';
/** DynamoDB calls AWS authorizes with the partition keys they name (besides transactions, per item). */
const DYNAMODB_KEYED = new Set(['Query', 'GetItem', 'PutItem', 'UpdateItem', 'DeleteItem']);
const DYNAMODB_BATCH = new Set(['BatchGetItem', 'BatchWriteItem']);

/** A batch's or a transaction's item, as the recording proxy writes it down. */
interface RecordedOperation {
  operation: string;
  table: string;
  /** The item's partition key value. */
  leadingKey?: string;
}

/**
 * The IAM requests AWS authorizes for one recorded call, or why it cannot tell.
 *
 * @example
 * iamRequestsOf({ service: 'sqs', action: 'SendMessageBatch', resources: [queueArn], region, }, account)
 * // [{ action: 'sqs:SendMessage', resource: queueArn }]
 */
export function iamRequestsOf(
  call: Pick<AwsCallRecord, 'service' | 'action' | 'resources' | 'context' | 'region'>,
  account: string,
): IamRequest[] | { unmapped: string } {
  const { service, action, resources } = call;
  const context = call.context ?? {};
  const each = (iamAction: string, on: readonly string[] = resources): IamRequest[] =>
    WILDCARD_ONLY.has(iamAction) || on.length === 0
      ? [{ action: iamAction, resource: '*' }]
      : on.map((resource) => ({ action: iamAction, resource }));

  if (service === 'dynamodb') {
    const operations = (context.operations ?? []) as RecordedOperation[];
    if (action === 'TransactWriteItems' || action === 'TransactGetItems') {
      if (operations.length === 0) return { unmapped: `${action} without its items recorded` };
      const requests: IamRequest[] = [];
      for (const [i, { operation, table, leadingKey }] of operations.entries()) {
        const item = TRANSACT_ITEM[operation];
        if (!item) return { unmapped: `${action} item ${i} is a ${operation}` };
        if (leadingKey === undefined) return { unmapped: `${action} item ${i + 1} without its partition key recorded` };
        requests.push({
          action: `dynamodb:${item}`,
          resource: `arn:aws:dynamodb:${call.region}:${account}:table/${table}`,
          context: { [LEADING_KEYS]: [leadingKey] },
          part: `item ${i + 1} (${operation})`,
        });
      }
      return requests;
    }
    // BatchGetItem and BatchWriteItem are actions of their own, on each table of the request,
    // with the partition keys of that table's items.
    if (DYNAMODB_BATCH.has(action)) {
      const requests: IamRequest[] = [];
      for (const request of each(`dynamodb:${action}`)) {
        const table = request.resource.slice(request.resource.indexOf(':table/') + ':table/'.length);
        const items = operations.filter((o) => o.table === table);
        const keys = [...new Set(items.flatMap((o) => (o.leadingKey === undefined ? [] : [o.leadingKey])))];
        if (items.length === 0 || keys.length === 0 || items.some((o) => o.leadingKey === undefined)) {
          return { unmapped: `${action} on ${table} without the partition keys of its items recorded` };
        }
        requests.push({ ...request, context: { [LEADING_KEYS]: keys } });
      }
      return requests;
    }
    if (DYNAMODB_KEYED.has(action)) {
      const keys = context.leadingKeys;
      if (!Array.isArray(keys) || keys.length === 0 || !keys.every((k) => typeof k === 'string')) {
        return { unmapped: `${action} without its partition key recorded` };
      }
      return each(`dynamodb:${action}`).map((request) => ({ ...request, context: { [LEADING_KEYS]: keys } }));
    }
    return each(`dynamodb:${action}`);
  }
  if (service === 'sqs') {
    if (action === 'StartMessageMoveTask') {
      const destination = context.destinationArn;
      if (typeof destination !== 'string') {
        return { unmapped: 'StartMessageMoveTask without DestinationArn (to the original source queues)' };
      }
      return [
        ...['StartMessageMoveTask', 'ReceiveMessage', 'DeleteMessage', 'GetQueueAttributes'].flatMap((a) =>
          each(`sqs:${a}`).map((r) => ({ ...r, part: 'source' })),
        ),
        { action: 'sqs:SendMessage', resource: destination, part: 'destination' },
      ];
    }
    return each(`sqs:${SQS_BATCH[action] ?? action}`);
  }
  if (service === 'scheduler') {
    const requests = each(`scheduler:${action}`);
    const passed = context['iam:PassRole'];
    if ((action === 'CreateSchedule' || action === 'UpdateSchedule') && typeof passed === 'string') {
      requests.push({
        action: 'iam:PassRole',
        resource: passed,
        context: { 'iam:PassedToService': 'scheduler.amazonaws.com' },
        part: 'Target.RoleArn',
      });
    }
    return requests;
  }
  // HeadObject is authorised as s3:GetObject (Service Authorization Reference, Amazon S3: HeadObject
  // lists no action of its own; "To use HEAD, you must have READ access to the object")
  if (service === 's3') return each(`s3:${action === 'HeadObject' ? 'GetObject' : action}`);
  if (!service) return { unmapped: 'unsigned request (no SigV4 scope)' };
  return each(`${service}:${action}`);
}

interface RoleInfo {
  roleArn: string;
  kind: RoleKind;
  functionId: string;
  type?: string;
  env: Record<string, string>;
  ownQueueArn?: string;
  policies: { name: string; policy: PolicyDocument }[];
}

interface PolicyDocument {
  Version?: string;
  Statement: Record<string, unknown> | Record<string, unknown>[];
}

const list = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

/** Which role each function has, and what kind of function it is (from how it is invoked). */
function roleInfos(app: IamProofInput['app']): Map<string, RoleInfo> {
  const byRole = new Map<string, RoleInfo>();
  const policiesOf = (role: RolePolicies | undefined) => {
    if (!role) return [];
    const managed = role.managed.map((m) => {
      if (!m.document) throw new Error(`managed policy ${m.arn} of ${role.roleArn} has no document to evaluate`);
      return { name: m.arn, policy: m.document as PolicyDocument };
    });
    return [
      ...Object.entries(role.inline).map(([name, policy]) => ({ name, policy: policy as PolicyDocument })),
      ...managed,
    ];
  };
  for (const fn of app.functions) {
    const config: FunctionConfiguration = fn.configuration;
    const mapping = app.mappings.find((m) => m.FunctionArn === config.FunctionArn);
    const kind: RoleKind = app.functionUrls.some((u) => u.functionName === config.FunctionName)
      ? 'api'
      : mapping
        ? 'worker'
        : app.rules.some((rule) => rule.targets.some((t) => t.arn === config.FunctionArn))
          ? 'supervisor'
          : 'function';
    const env = config.Environment?.Variables ?? {};
    const prefix = env[ENV.queuePrefix];
    const queueName = mapping?.EventSourceArn.slice(mapping.EventSourceArn.lastIndexOf(':') + 1);
    const type =
      queueName && prefix && queueName.startsWith(`${prefix}_ready_`)
        ? queueName.slice(`${prefix}_ready_`.length)
        : undefined;
    if (byRole.has(config.Role)) throw new Error(`role ${config.Role} is shared by two functions`);
    byRole.set(config.Role, {
      roleArn: config.Role,
      kind,
      functionId: fn.logicalId,
      ...(type ? { type } : {}),
      env,
      ...(mapping ? { ownQueueArn: mapping.EventSourceArn } : {}),
      policies: policiesOf(app.roles.find((r) => r.roleArn === config.Role)),
    });
  }
  return byRole;
}

/** The resource of a policy line in words, the same for every role of a kind. */
function resourceLabel(resource: string, role: RoleInfo, account: string): string {
  if (resource === '*') return '*';
  const env = role.env;
  const arn = /^arn:aws:([^:]+):([^:]*):([^:]*):(.*)$/.exec(resource);
  if (!arn) return resource;
  const [, service, region, , rest] = arn as unknown as [string, string, string, string, string];
  if (service === 'dynamodb' && env[ENV.table]) {
    const table = `arn:aws:dynamodb:${region}:${account}:table/${env[ENV.table]}`;
    if (resource === table) return 'table';
    if (resource.startsWith(`${table}/index/`)) return `index ${resource.slice(table.length + '/index/'.length)}`;
  }
  if (service === 'sqs') {
    const base = env[ENV.queueArnBase];
    const prefix = env[ENV.queuePrefix];
    if (resource === role.ownQueueArn) return 'own ready queue';
    if (base && prefix && resource === `${base}${prefix}_ready_*`) return 'ready queues';
    if (base && prefix && resource === `${base}${prefix}_dlq_*`) return 'DLQs';
  }
  if (service === 'scheduler' && env[ENV.scheduleGroup] && rest === `schedule/${env[ENV.scheduleGroup]}/*`) {
    return 'schedules of the group';
  }
  if (service === 'iam' && resource === env[ENV.schedulerRoleArn]) return 'Scheduler role';
  if (service === 'ssm' && env[ENV.grantsParameter] && rest === `parameter/${env[ENV.grantsParameter]}`) {
    return 'grants parameter';
  }
  if (service === 'logs' && rest.startsWith('log-group:')) return 'own log group';
  const bucket = env[ENV.payloadBucket];
  if (service === 's3' && bucket && rest === bucket) return 'payload bucket';
  if (service === 's3' && bucket && rest.startsWith(`${bucket}/`))
    return `payload objects ${rest.slice(bucket.length + 1)}`;
  return resource;
}

function grantsOf(role: RoleInfo, account: string): Grant[] {
  const grants: Grant[] = [];
  for (const { name, policy } of role.policies) {
    for (const [i, statement] of list(policy.Statement).entries()) {
      if (statement.Effect !== 'Allow') continue;
      const actions = statement.Action
        ? list(statement.Action as string | string[])
        : [`NotAction ${JSON.stringify(statement.NotAction)}`];
      const resources = statement.Resource
        ? list(statement.Resource as string | string[])
        : [`NotResource ${JSON.stringify(statement.NotResource)}`];
      for (const action of actions) {
        for (const resource of resources) {
          const label = resourceLabel(resource, role, account);
          grants.push({
            roleArn: role.roleArn,
            kind: role.kind,
            functionId: role.functionId,
            ...(role.type ? { type: role.type } : {}),
            policy: name,
            statement: i + 1,
            action,
            resource,
            label,
            key: `${role.kind} ${action} ${label}`,
            ...(statement.Condition ? { condition: statement.Condition } : {}),
            uses: 0,
            matched: new Set(),
          });
        }
      }
    }
  }
  return grants;
}

/** Runs the IAM proof over a run's calls (see the file comment). */
export async function proveIam(input: IamProofInput): Promise<IamProof> {
  const { account } = input;
  const justifications = input.justifications ?? UNUSED_STATEMENT_VERDICTS;
  const roles = roleInfos(input.app);
  const grants = [...roles.values()].flatMap((role) => grantsOf(role, account));
  const grantIndex = new Map<string, Grant>();
  for (const grant of grants) {
    grantIndex.set(`${grant.roleArn}|${grant.policy}|${grant.statement}|${grant.action}|${grant.resource}`, grant);
  }
  const queuePolicy = new Map<string, PolicyDocument>();
  for (const policy of input.app.queuePolicies) {
    for (const queueArn of policy.queueArns) {
      const existing = queuePolicy.get(queueArn);
      // Two policies on one queue: AWS keeps the last one written; the harness evaluates both.
      queuePolicy.set(
        queueArn,
        existing
          ? { Version: '2012-10-17', Statement: [...list(existing.Statement), ...list(policy.document.Statement)] }
          : policy.document,
      );
    }
  }

  const notEvaluated: Record<string, number> = {};
  const callsPerRole = new Map<string, number>();
  const denied = new Map<string, IamDenial>();
  const deny = (denial: Omit<IamDenial, 'count'>) => {
    const key = JSON.stringify([denial.function, denial.via, denial.call, denial.action, denial.resource]);
    const entry = denied.get(key) ?? { ...denial, count: 0 };
    entry.count += 1;
    denied.set(key, entry);
  };
  const cache = new Map<string, Promise<Outcome>>();
  const leadingKeys: Record<string, number> = {};
  let evaluated = 0;
  let requestCount = 0;
  let sqsQueueRequests = 0;
  let sqsWithPolicy = 0;
  const queuesWithout = new Set<string>();

  for (const call of input.calls) {
    const principal = input.principals.get(call.accessKeyId);
    if (principal && NOT_EVALUATED_VIA.has(principal.via)) {
      notEvaluated[principal.name] = (notEvaluated[principal.name] ?? 0) + 1;
      continue;
    }
    const callName = `${call.service}:${call.action}`;
    const role = principal?.roleArn ? roles.get(principal.roleArn) : undefined;
    if (!principal?.roleArn || !principal.assumedRoleArn || !role) {
      deny({
        function: call.principal,
        via: call.via,
        kind: 'unknown',
        call: callName,
        action: '-',
        resource: call.resources.join(', '),
        context: {},
        result: 'not evaluated',
        missing: principal
          ? `no deployed role for ${principal.roleArn ?? principal.name}`
          : `credentials ${call.accessKeyId || '(unsigned)'} the harness did not hand out`,
      });
      continue;
    }
    evaluated += 1;
    callsPerRole.set(role.roleArn, (callsPerRole.get(role.roleArn) ?? 0) + 1);
    const requests = iamRequestsOf(call, account);
    if ('unmapped' in requests) {
      deny({
        function: role.functionId,
        via: call.via,
        kind: role.kind,
        call: callName,
        action: '-',
        resource: call.resources.join(', '),
        context: {},
        result: 'not evaluated',
        missing: `no mapping to IAM actions: ${requests.unmapped}`,
      });
      continue;
    }
    for (const request of requests) {
      requestCount += 1;
      if (request.context?.[LEADING_KEYS]) leadingKeys[request.action] = (leadingKeys[request.action] ?? 0) + 1;
      const context: Record<string, string | string[]> = {
        'aws:SecureTransport': 'true',
        'aws:PrincipalArn': role.roleArn,
        'aws:PrincipalAccount': account,
        'aws:RequestedRegion': call.region,
        ...request.context,
      };
      const resourcePolicy = request.action.startsWith('sqs:') ? queuePolicy.get(request.resource) : undefined;
      if (request.action.startsWith('sqs:') && request.resource !== '*') {
        sqsQueueRequests += 1;
        if (resourcePolicy) sqsWithPolicy += 1;
        else queuesWithout.add(request.resource);
      }
      const key = JSON.stringify([role.roleArn, request.action, request.resource, context]);
      let outcome = cache.get(key);
      if (!outcome) {
        outcome = evaluate(role, principal.assumedRoleArn, request, context, resourcePolicy, account);
        cache.set(key, outcome);
      }
      const result = await outcome;
      if (result.allowed) {
        for (const line of result.lines) {
          const grant = grantIndex.get(`${role.roleArn}|${line}`);
          if (!grant) continue;
          grant.uses += 1;
          if (request.resource !== grant.resource) grant.matched.add(request.resource);
        }
        continue;
      }
      deny({
        function: role.functionId,
        via: call.via,
        kind: role.kind,
        call: `${callName}${request.part ? ` (${request.part})` : ''}`,
        action: request.action,
        resource: request.resource,
        context: request.context ?? {},
        result: result.result,
        missing: result.missing,
      });
    }
  }

  // Verdicts for the lines no call used.
  const usedKeys = new Map<string, Set<string>>();
  for (const grant of grants) {
    if (grant.uses === 0) continue;
    const users = usedKeys.get(grant.key) ?? new Set();
    users.add(grant.type ?? grant.functionId);
    usedKeys.set(grant.key, users);
  }
  const unjustified: Grant[] = [];
  const applied = new Set<string>();
  for (const grant of grants) {
    if (grant.uses > 0) continue;
    if (
      grant.action.startsWith('dynamodb:') &&
      grant.label.startsWith('index ') &&
      !DYNAMODB_INDEX_ACTIONS.has(grant.action)
    ) {
      grant.verdict = {
        source: 'not-applicable',
        text: `${grant.action} authorizes on the table, never on an index: the index is in this statement for its Query`,
        fate: 'n/a',
      };
      continue;
    }
    const others = usedKeys.get(grant.key);
    if (others && others.size > 0) {
      grant.verdict = {
        source: 'same-kind',
        text: `used by the ${grant.kind} of ${[...others].sort().join(', ')} (same construct, same statement); ${grant.type ?? grant.functionId} took no such path in the suite`,
        fate: 'kept',
      };
      continue;
    }
    const justification = justifications[grant.key];
    if (justification) {
      grant.verdict = { source: 'justification', text: justification.verdict, fate: justification.fate };
      applied.add(grant.key);
      continue;
    }
    unjustified.push(grant);
  }
  const keys = new Set(grants.map((g) => g.key));
  const staleJustifications = Object.keys(justifications).filter((key) => !keys.has(key));
  const idleJustifications = Object.keys(justifications).filter((key) => keys.has(key) && !applied.has(key));

  return {
    simulator: input.simulator ?? '@cloud-copilot/iam-simulate',
    calls: { evaluated, requests: requestCount, distinctRequests: cache.size, notEvaluated, leadingKeys },
    queuePolicies: {
      requests: sqsQueueRequests,
      withPolicy: sqsWithPolicy,
      policies: input.app.queuePolicies.length,
      queuesWithout: [...queuesWithout].sort(),
    },
    roles: [...roles.values()].map((role) => ({
      roleArn: role.roleArn,
      kind: role.kind,
      functionId: role.functionId,
      ...(role.type ? { type: role.type } : {}),
      calls: callsPerRole.get(role.roleArn) ?? 0,
    })),
    grants,
    denied: [...denied.values()],
    unjustified,
    staleJustifications,
    idleJustifications,
  };
}

type Outcome = { allowed: true; lines: string[] } | { allowed: false; result: string; missing: string };

async function evaluate(
  role: RoleInfo,
  principal: string,
  request: IamRequest,
  context: Record<string, string | string[]>,
  resourcePolicy: PolicyDocument | undefined,
  account: string,
): Promise<Outcome> {
  const resourceAccount = /^arn:aws:[^:]+:[^:]*:(\d{12}):/.exec(request.resource)?.[1] ?? account;
  const simulation: Simulation = {
    request: {
      principal,
      action: request.action,
      resource: { resource: request.resource, accountId: resourceAccount },
      contextVariables: context,
    },
    identityPolicies: role.policies,
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    ...(resourcePolicy ? { resourcePolicy } : {}),
  };
  const response = await runSimulation(simulation, {});
  if (response.resultType === 'error') {
    return {
      allowed: false,
      result: 'not evaluated',
      missing: `the simulator refused the request: ${JSON.stringify(response.errors)}`,
    };
  }
  const results = response.resultType === 'single' ? [response.result] : response.results;
  if (response.overallResult === 'Allowed') {
    const lines: string[] = [];
    for (const result of results) {
      for (const statement of result.analysis.identityAnalysis?.allowStatements ?? []) {
        const actions = list(statement.explain.actions)
          .filter((a) => a.matches)
          .map((a) => a.action);
        const resources = list(statement.explain.resources)
          .filter((r) => r.matches)
          .map((r) => r.resource);
        for (const action of actions) {
          for (const resource of resources)
            lines.push(`${statement.policyId}|${statement.statement.index()}|${action}|${resource}`);
        }
      }
    }
    return { allowed: true, lines };
  }
  const analysis = results[0]?.analysis;
  const explicit = [
    ...(analysis?.identityAnalysis?.denyStatements ?? []).map((s) => `${s.policyId} statement ${s.statement.index()}`),
    ...(analysis?.resourceAnalysis?.denyStatements ?? []).map(
      (s) => `the queue policy's statement ${s.statement.index()}`,
    ),
  ];
  const conditionKeys = Object.keys(request.context ?? {});
  return {
    allowed: false,
    result: response.overallResult,
    missing:
      explicit.length > 0
        ? `denied by ${explicit.join(', ')}`
        : `an Allow of ${request.action} on ${request.resource}${conditionKeys.length > 0 ? ` with ${conditionKeys.map((k) => `${k}=${request.context?.[k]}`).join(', ')}` : ''}`,
  };
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The markdown report (.orrery/deployed/iam-report.md). */
export function renderIamReport(proof: IamProof, run: { writtenAt: string; calls: number }): string {
  const lines: string[] = [];
  const failed = iamFailures(proof);
  lines.push('# IAM proven from the calls', '');
  lines.push(
    `Run of ${run.writtenAt}: ${run.calls} AWS calls recorded; ${proof.calls.evaluated} made with a function's role ` +
      `(its code or its event source mapping), mapped to ${proof.calls.requests} IAM requests ` +
      `(${proof.calls.distinctRequests} distinct), each evaluated with ${proof.simulator} against the role's ` +
      'policies as deployed (and the queue policy for an SQS request on a queue), with `aws:SecureTransport` = true.',
    '',
  );
  const skipped = Object.entries(proof.calls.notEvaluated);
  if (skipped.length > 0) {
    lines.push(
      `Not evaluated (the tests' and the harness's own calls, not a function's): ${skipped.map(([name, n]) => `${name} ${n}`).join(', ')}.`,
      '',
    );
  }
  lines.push(
    `Queue policies: ${proof.queuePolicies.policies} resolved from the templates; ${proof.queuePolicies.withPolicy} of ` +
      `${proof.queuePolicies.requests} SQS requests on a queue were evaluated with their queue's policy` +
      `${proof.queuePolicies.queuesWithout.length > 0 ? ` (none for ${proof.queuePolicies.queuesWithout.join(', ')})` : ''}.`,
    '',
  );
  const keyed = Object.entries(proof.calls.leadingKeys).sort(([a], [b]) => a.localeCompare(b));
  lines.push(
    `DynamoDB requests evaluated with \`dynamodb:LeadingKeys\` (the partition key values they name): ${
      keyed.length > 0 ? keyed.map(([action, n]) => `${action} ${n}`).join(', ') : 'none'
    }.`,
    '',
  );
  lines.push(`**Result: ${failed.length === 0 ? 'proven' : `${failed.length} failure(s)`}.**`, '');

  lines.push('## Denied calls', '');
  if (proof.denied.length === 0) lines.push('None.', '');
  else {
    lines.push(
      '| function | via | call | IAM action | resource | result | missing | calls |',
      '| --- | --- | --- | --- | --- | --- | --- | --- |',
    );
    for (const d of proof.denied) {
      lines.push(
        `| ${cell(d.function)} | ${d.via} | ${cell(d.call)} | ${d.action} | ${cell(d.resource)} | ${d.result} | ${cell(d.missing)} | ${d.count} |`,
      );
    }
    lines.push('');
  }

  lines.push('## Unused statements', '');
  lines.push(
    'Each line of a role policy (action × resource) that no call used, grouped by role kind; `roles` counts the roles ' +
      "of that kind where it is unused. A worker's line that another type's worker used is not listed here (see the " +
      'last table).',
    '',
  );
  lines.push('| kind | action | resource | roles | verdict | fate |', '| --- | --- | --- | --- | --- | --- |');
  const groups = new Map<string, { grant: Grant; roles: number }>();
  for (const grant of proof.grants) {
    if (grant.uses > 0 || grant.verdict?.source === 'same-kind' || grant.verdict?.source === 'not-applicable') continue;
    const group = groups.get(grant.key) ?? { grant, roles: 0 };
    group.roles += 1;
    groups.set(grant.key, group);
  }
  for (const { grant, roles } of [...groups.values()].sort((a, b) => a.grant.key.localeCompare(b.grant.key))) {
    const total = proof.roles.filter((r) => r.kind === grant.kind).length;
    lines.push(
      `| ${grant.kind} | ${grant.action} | ${cell(grant.label)} | ${roles}/${total} | ${cell(grant.verdict?.text ?? '**no justification**')} | ${grant.verdict?.fate ?? '-'} |`,
    );
  }
  lines.push('');
  const na = proof.grants.filter((g) => g.verdict?.source === 'not-applicable');
  if (na.length > 0) {
    lines.push(
      `Not applicable (${na.length} lines): DynamoDB item actions listed with an index ARN in the same statement ` +
        `(${[...new Set(na.map((g) => `${g.kind} ${g.action} ${g.label}`))].join('; ')}).`,
      '',
    );
  }
  if (proof.staleJustifications.length > 0) {
    lines.push(`Justifications for lines no role has (remove them): ${proof.staleJustifications.join('; ')}.`, '');
  }
  if (proof.idleJustifications.length > 0) {
    lines.push(
      `Justifications not needed in this run (their lines were used): ${proof.idleJustifications.join('; ')}.`,
      '',
    );
  }

  lines.push('## Every line, per role', '');
  lines.push(
    '| role (function) | kind | action | resource | calls | verdict |',
    '| --- | --- | --- | --- | --- | --- |',
  );
  for (const role of [...proof.roles].sort(
    (a, b) => a.kind.localeCompare(b.kind) || a.functionId.localeCompare(b.functionId),
  )) {
    for (const grant of proof.grants.filter((g) => g.roleArn === role.roleArn)) {
      const matched =
        grant.matched.size > 0
          ? ` (${[...grant.matched]
              .map((m) => m.slice(m.lastIndexOf(':') + 1))
              .sort()
              .join(', ')})`
          : '';
      const condition = grant.condition ? ` when ${JSON.stringify(grant.condition)}` : '';
      lines.push(
        `| ${cell(role.type ?? role.functionId)} | ${role.kind} | ${grant.action} | ${cell(grant.label)}${cell(matched)}${cell(condition)} | ${grant.uses} | ${cell(grant.uses > 0 ? 'used' : (grant.verdict?.text ?? '**no justification**'))} |`,
      );
    }
  }
  lines.push('');
  return `${lines.join('\n')}\n`;
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(keyOf(item), [...(groups.get(keyOf(item)) ?? []), item]);
  return groups;
}

/**
 * Why the run fails, one line each (empty: proven). `unusedLines: false` leaves out the unused
 * lines without a justification and the stale justifications (a run of part of the suite).
 */
export function iamFailures(proof: IamProof, { unusedLines = true }: { unusedLines?: boolean } = {}): string[] {
  const denied = proof.denied.map(
    (d) =>
      `${d.function} (${d.kind}, ${d.via}): ${d.call} → ${d.action} on ${d.resource}: ${d.result}; missing: ${d.missing} (${d.count}×)`,
  );
  if (!unusedLines) return denied;
  return [
    ...denied,
    ...[...groupBy(proof.unjustified, (g) => g.key).entries()].map(
      ([key, grants]) =>
        `unused and unjustified: ${key} (${grants.length} role(s), e.g. ${grants[0]?.functionId}: ${grants[0]?.action} on ` +
        `${grants[0]?.resource}, ${grants[0]?.policy} statement ${grants[0]?.statement}): remove the permission or add ` +
        `"${key}" to test/deployed/iam-justifications.ts`,
    ),
    ...proof.staleJustifications.map((key) => `justification "${key}" matches no line of any role: remove it`),
  ];
}

/** A few lines for the console. */
export function summariseIamProof(proof: IamProof): string {
  const unused = proof.grants.filter((g) => g.uses === 0 && g.verdict?.source !== 'not-applicable');
  const byKey = new Map<string, number>();
  for (const g of unused) byKey.set(g.key, (byKey.get(g.key) ?? 0) + 1);
  const justified = [...byKey.keys()].filter((k) =>
    unused.some((g) => g.key === k && g.verdict?.source === 'justification'),
  );
  return [
    `IAM: ${proof.calls.evaluated} function calls → ${proof.calls.requests} IAM requests (${proof.calls.distinctRequests} distinct), ` +
      `${proof.denied.reduce((n, d) => n + d.count, 0)} denied` +
      ` (with dynamodb:LeadingKeys: ${
        Object.entries(proof.calls.leadingKeys)
          .map(([action, n]) => `${action.replace('dynamodb:', '')} ${n}`)
          .join(', ') || 'none'
      }); ` +
      `${proof.grants.filter((g) => g.uses > 0).length} of ${proof.grants.length} policy lines used, ` +
      `${unused.filter((g) => g.verdict?.source === 'same-kind').length} used only by another type's worker, ` +
      `${unused.filter((g) => g.verdict?.source === 'justification').length} justified (${justified.length} kinds of line), ` +
      `${proof.unjustified.length} unjustified`,
    ...justified.map((key) => `  unused: ${key}: ${proof.grants.find((g) => g.key === key)?.verdict?.fate}`),
  ].join('\n');
}
