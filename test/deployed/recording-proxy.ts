/**
 * The recording proxy: every AWS call of the deployed functions passes through it on its way to
 * moto (test/deployed/aws-network.mjs routes `*.amazonaws.com` here), and it writes down who
 * made it (the SigV4 access key, which the harness handed out with AssumeRole on one
 * function's role), the service, the action, the resources (ARNs, as IAM names them), the
 * region, and the context an IAM evaluation needs (the role passed to a schedule, the items of a
 * batch or a transaction). These records feed the IAM check of issue 23 (item 4).
 *
 * DynamoDB calls go on to moto through the serial proxy (test/local-aws/moto.ts: moto does not
 * serialise conditional writes to one item, DynamoDB does); the rest go to moto directly.
 */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { JOB_TABLE } from '../../shared/core/table';
import { listenOnLoopback } from '../local-aws/loopback';

/** Who a set of credentials belongs to. */
export interface Principal {
  /** The function's logical id in the template, or `e2e-caller`, `harness`... */
  name: string;
  /** What acts with these credentials: the function's code, the event source mapping polling for it, a test. */
  via: 'function' | 'event-source-mapping' | 'caller' | 'harness';
  functionName?: string;
  roleArn?: string;
  /** `arn:aws:sts::<account>:assumed-role/<role>/<session>` */
  assumedRoleArn?: string;
}

/** One AWS call as the proxy saw it. */
export interface AwsCallRecord {
  time: string;
  principal: string;
  via: Principal['via'] | 'unknown';
  accessKeyId: string;
  service: string;
  region: string;
  /** The API action (`PutItem`, `SendMessage`, `CreateSchedule`). */
  action: string;
  /** ARNs of the resources the call names (table, index, queue, schedule, group). */
  resources: string[];
  /**
   * What else an IAM evaluation may need: `iam:PassRole` candidates, batch/transaction items
   * (`operations`, each with its partition key value `leadingKey`), and a DynamoDB call's
   * partition key values (`leadingKeys`: a Query's, an item action's).
   */
  context?: Record<string, unknown>;
  status: number;
  /** The AWS error code of a 4xx/5xx answer, when the body names one. */
  errorCode?: string;
  durationMs: number;
}

export interface RecordingProxy {
  /** `http://127.0.0.1:PORT` */
  readonly endpoint: string;
  readonly calls: readonly AwsCallRecord[];
  /** Registers credentials handed out (access key id → principal). */
  register(accessKeyId: string, principal: Principal): void;
  principals(): ReadonlyMap<string, Principal>;
  stop(): Promise<void>;
}

export interface RecordingProxyOptions {
  /** moto's endpoint. */
  upstream: string;
  /** Where DynamoDB calls go (the serial proxy in front of moto). @default upstream */
  dynamodbUpstream?: string;
  /** The account the ARNs name. */
  account: string;
}

/**
 * Starts the proxy on 127.0.0.1.
 *
 * @example
 * const proxy = await startRecordingProxy({ upstream: moto.endpoint, dynamodbUpstream: serial.endpoint, account });
 * proxy.register(credentials.accessKeyId, { name: 'ApiHandler', via: 'function' });
 */
export async function startRecordingProxy(options: RecordingProxyOptions): Promise<RecordingProxy> {
  const calls: AwsCallRecord[] = [];
  const principals = new Map<string, Principal>();
  const upstream = new URL(options.upstream);
  const dynamodb = new URL(options.dynamodbUpstream ?? options.upstream);

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => forward(req, Buffer.concat(chunks), res));
  });

  function forward(req: IncomingMessage, body: Buffer, res: ServerResponse): void {
    const started = performance.now();
    const scope = signingScope(req.headers.authorization);
    const target = scope.service === 'dynamodb' ? dynamodb : upstream;
    const outgoing = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        const status = answer.statusCode ?? 502;
        const errorChunks: Buffer[] = [];
        res.writeHead(status, answer.headers);
        answer.on('data', (chunk: Buffer) => {
          if (status >= 400 && errorChunks.length < 8) errorChunks.push(chunk);
          res.write(chunk);
        });
        answer.on('end', () => {
          res.end();
          record(req, body, scope, status, Buffer.concat(errorChunks).toString('utf8'), started);
        });
        answer.on('error', () => res.destroy());
      },
    );
    outgoing.on('error', (error) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`recording proxy: ${String(error)}`);
      record(req, body, scope, 502, String(error), started);
    });
    outgoing.end(body);
  }

  function record(
    req: IncomingMessage,
    body: Buffer,
    scope: SigningScope,
    status: number,
    errorBody: string,
    started: number,
  ): void {
    const principal = principals.get(scope.accessKeyId);
    const described = describeCall({
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      target: headerValue(req.headers['x-amz-target']),
      contentType: headerValue(req.headers['content-type']),
      host: headerValue(req.headers.host),
      body,
      service: scope.service,
      region: scope.region,
      account: options.account,
    });
    const errorCode = status >= 400 ? awsErrorCode(errorBody) : undefined;
    calls.push({
      time: new Date().toISOString(),
      principal: principal?.name ?? `unknown:${scope.accessKeyId || 'unsigned'}`,
      via: principal?.via ?? 'unknown',
      accessKeyId: scope.accessKeyId,
      service: scope.service,
      region: scope.region,
      action: described.action,
      resources: described.resources,
      ...(described.context ? { context: described.context } : {}),
      status,
      ...(errorCode ? { errorCode } : {}),
      durationMs: Math.round(performance.now() - started),
    });
  }

  const endpoint = await listenOnLoopback(server);
  return {
    endpoint,
    calls,
    register: (accessKeyId, principal) => principals.set(accessKeyId, principal),
    principals: () => principals,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

interface SigningScope {
  accessKeyId: string;
  region: string;
  service: string;
}

/** `AWS4-HMAC-SHA256 Credential=<key>/<date>/<region>/<service>/aws4_request, ...` */
function signingScope(authorization: string | undefined): SigningScope {
  const match = /Credential=([^/]+)\/\d{8}\/([^/]+)\/([^/]+)\/aws4_request/.exec(authorization ?? '');
  return { accessKeyId: match?.[1] ?? '', region: match?.[2] ?? '', service: match?.[3] ?? '' };
}

function awsErrorCode(body: string): string | undefined {
  try {
    const json = JSON.parse(body) as { __type?: string; code?: string };
    const type = json.__type ?? json.code;
    if (type) return type.replace(/^.*#/, '');
  } catch {
    // XML or text
  }
  return /<Code>([^<]+)<\/Code>/.exec(body)?.[1];
}

interface CallInput {
  method: string;
  url: string;
  target: string | undefined;
  contentType: string | undefined;
  /** The Host header: an S3 request in virtual-hosted style names its bucket there. @default none */
  host?: string | undefined;
  body: Buffer;
  service: string;
  region: string;
  account: string;
}

/**
 * The action, resources and IAM context of one request (exported for tests).
 *
 * @example
 * describeCall({ method: 'POST', url: '/', target: 'DynamoDB_20120810.PutItem', body, service: 'dynamodb', ... })
 * // { action: 'PutItem', resources: ['arn:aws:dynamodb:us-east-1:123456789012:table/jobs'] }
 */
export function describeCall(input: CallInput): {
  action: string;
  resources: string[];
  context?: Record<string, unknown>;
} {
  const url = new URL(input.url, 'http://aws');
  let json: Record<string, unknown> = {};
  let form: URLSearchParams | undefined;
  const text = input.body.toString('utf8');
  if (/json/.test(input.contentType ?? '') && text) {
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      json = {};
    }
  } else if (/x-www-form-urlencoded/.test(input.contentType ?? '')) {
    form = new URLSearchParams(text);
  }
  const action =
    input.target?.split('.').pop() ??
    form?.get('Action') ??
    url.searchParams.get('Action') ??
    restAction(input.service, input.method, url.pathname);
  const arn = (service: string, resource: string) => `arn:aws:${service}:${input.region}:${input.account}:${resource}`;
  const queueArn = (queueUrl: unknown) => {
    if (typeof queueUrl !== 'string') return undefined;
    const [, account, name] = new URL(queueUrl, 'http://aws').pathname.split('/');
    return name ? `arn:aws:sqs:${input.region}:${account ?? input.account}:${name}` : undefined;
  };
  const resources = new Set<string>();
  const context: Record<string, unknown> = {};
  if (input.service === 's3') return describeS3(input, url);

  if (input.service === 'dynamodb') {
    const table = (name: unknown, index?: unknown) => {
      if (typeof name !== 'string') return;
      resources.add(arn('dynamodb', `table/${name}${typeof index === 'string' ? `/index/${index}` : ''}`));
    };
    table(json.TableName, json.IndexName);
    // The partition key values the request names (IAM's dynamodb:LeadingKeys): per item of a
    // batch or a transaction, else for the whole call.
    const operations: { operation: string; table: string; leadingKey?: string }[] = [];
    const operation = (name: string, tableName: string, item: unknown) => {
      const leadingKey = partitionValue(item);
      operations.push({ operation: name, table: tableName, ...(leadingKey !== undefined ? { leadingKey } : {}) });
    };
    for (const [name, items] of Object.entries((json.RequestItems ?? {}) as Record<string, unknown>)) {
      table(name);
      if (Array.isArray(items)) {
        for (const item of items as Record<string, { Item?: unknown; Key?: unknown }>[]) {
          const [kind, request] = Object.entries(item)[0] ?? ['?', {}];
          operation(kind, name, request.Item ?? request.Key);
        }
      } else {
        for (const key of ((items as { Keys?: unknown[] }).Keys ?? []) as unknown[]) operation('Get', name, key);
      }
    }
    for (const item of (json.TransactItems ?? []) as Record<
      string,
      { TableName?: string; Item?: unknown; Key?: unknown }
    >[]) {
      for (const [kind, detail] of Object.entries(item)) {
        table(detail.TableName);
        operation(kind, detail.TableName ?? '?', detail.Item ?? detail.Key);
      }
    }
    if (operations.length > 0) context.operations = operations;
    const single = action === 'Query' ? queryPartitionValue(json) : partitionValue((json.Key ?? json.Item) as unknown);
    if (single !== undefined) context.leadingKeys = [single];
  } else if (input.service === 'sqs') {
    const queue = queueArn(json.QueueUrl ?? form?.get('QueueUrl'));
    if (queue) resources.add(queue);
    const name = json.QueueName ?? form?.get('QueueName');
    if (typeof name === 'string') resources.add(arn('sqs', name));
    // Message move tasks name their source queue (the DLQ) by ARN; IAM checks that ARN.
    if (typeof json.SourceArn === 'string') resources.add(json.SourceArn);
    if (typeof json.DestinationArn === 'string') context.destinationArn = json.DestinationArn;
    if (Array.isArray(json.Entries)) context.entries = json.Entries.length;
  } else if (input.service === 'ssm') {
    const parameter = (name: unknown) => {
      if (typeof name === 'string') resources.add(arn('ssm', `parameter/${name.replace(/^\//, '')}`));
    };
    parameter(json.Name ?? json.Path);
    if (Array.isArray(json.Names)) json.Names.forEach(parameter);
  } else if (input.service === 'scheduler') {
    const segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    if (segments[0] === 'schedules' && segments[1]) {
      const group = (json.GroupName as string | undefined) ?? url.searchParams.get('groupName') ?? 'default';
      resources.add(arn('scheduler', `schedule/${group}/${segments[1]}`));
    } else if (segments[0] === 'schedules') {
      const group = url.searchParams.get('ScheduleGroup');
      if (group) resources.add(arn('scheduler', `schedule-group/${group}`));
    } else if (segments[0] === 'schedule-groups' && segments[1]) {
      resources.add(arn('scheduler', `schedule-group/${segments[1]}`));
    }
    const target = json.Target as { Arn?: string; RoleArn?: string } | undefined;
    if (target?.RoleArn) context['iam:PassRole'] = target.RoleArn;
    if (target?.Arn) context.targetArn = target.Arn;
    if (typeof json.ActionAfterCompletion === 'string') context.actionAfterCompletion = json.ActionAfterCompletion;
  }
  return {
    action,
    resources: [...resources],
    ...(Object.keys(context).length > 0 ? { context } : {}),
  };
}

/**
 * The table's partition key attribute, and each index's (the app has one table, shaped by
 * shared/core/table.ts): what `dynamodb:LeadingKeys` is read from.
 */
const PARTITION_KEY = {
  table: JOB_TABLE.partitionKey,
  index: new Map(JOB_TABLE.indexes.map((index) => [index.name, index.partitionKey])),
};

/** A scalar attribute value (`{ S }`, `{ N }`, `{ B }`) as text. */
function scalar(value: unknown): string | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const { S, N, B } = value as { S?: unknown; N?: unknown; B?: unknown };
  const text = S ?? N ?? B;
  return typeof text === 'string' ? text : undefined;
}

/** An item's or a key's partition key value (the table's partition key attribute). */
function partitionValue(item: unknown): string | undefined {
  if (!item || typeof item !== 'object') return undefined;
  return scalar((item as Record<string, unknown>)[PARTITION_KEY.table]);
}

/**
 * A Query's partition key value: the equality on the partition key of the table, or of the index
 * queried, in `KeyConditionExpression` (names and values resolved), or the legacy `KeyConditions`.
 */
function queryPartitionValue(json: Record<string, unknown>): string | undefined {
  const attribute = typeof json.IndexName === 'string' ? PARTITION_KEY.index.get(json.IndexName) : PARTITION_KEY.table;
  if (!attribute) return undefined;
  const legacy = (
    json.KeyConditions as Record<string, { ComparisonOperator?: string; AttributeValueList?: unknown[] }>
  )?.[attribute];
  if (legacy?.ComparisonOperator === 'EQ') return scalar(legacy.AttributeValueList?.[0]);
  const expression = json.KeyConditionExpression;
  if (typeof expression !== 'string') return undefined;
  const names = (json.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const values = (json.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
  const name = (token: string) => (token.startsWith('#') ? names[token] : token);
  // `a = :v` or `:v = a` (in `a <= :v` or `a >= :v`, no name stands right before the `=`).
  for (const match of expression.matchAll(/([#:]?[\w.]+)\s*=\s*([#:]?[\w.]+)/g)) {
    const [, left = '', right = ''] = match;
    const [attr, placeholder] = left.startsWith(':') ? [right, left] : [left, right];
    if (name(attr) === attribute && placeholder.startsWith(':')) return scalar(values[placeholder]);
  }
  return undefined;
}

/**
 * An S3 object request (the payload bucket's: shared/aws/s3-blob-store.ts): the bucket from the
 * host (virtual-hosted style, `<bucket>.s3.<region>.amazonaws.com`) or the path's first segment
 * (path style), the key from the rest; the action from the method.
 */
function describeS3(input: CallInput, url: URL): { action: string; resources: string[] } {
  const host = (input.host ?? '').split(':')[0] ?? '';
  const virtual = /^(.+)\.s3[.-]/.exec(host)?.[1];
  const segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  const bucket = virtual ?? segments.shift() ?? '';
  const key = segments.join('/');
  if (!key) return { action: `${input.method} bucket`, resources: [`arn:aws:s3:::${bucket}`] };
  const action =
    { PUT: 'PutObject', GET: 'GetObject', HEAD: 'HeadObject', DELETE: 'DeleteObject' }[input.method] ??
    `${input.method} object`;
  return { action, resources: [`arn:aws:s3:::${bucket}/${key}`] };
}

/** REST APIs (Scheduler, Lambda, S3): the action from method and path. */
function restAction(service: string, method: string, path: string): string {
  const segments = path.split('/').filter(Boolean);
  if (service === 'scheduler') {
    const [collection, name] = segments;
    if (collection === 'schedules') {
      if (!name) return 'ListSchedules';
      return (
        { GET: 'GetSchedule', POST: 'CreateSchedule', PUT: 'UpdateSchedule', DELETE: 'DeleteSchedule' }[method] ??
        `${method} ${path}`
      );
    }
    if (collection === 'schedule-groups') {
      if (!name) return 'ListScheduleGroups';
      return (
        { GET: 'GetScheduleGroup', POST: 'CreateScheduleGroup', DELETE: 'DeleteScheduleGroup' }[method] ??
        `${method} ${path}`
      );
    }
    if (collection === 'tags')
      return (
        { GET: 'ListTagsForResource', POST: 'TagResource', DELETE: 'UntagResource' }[method] ?? `${method} ${path}`
      );
  }
  return `${method} ${path}`;
}
