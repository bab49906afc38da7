/**
 * The few AWS APIs the deployed-stack harness needs beyond the SDK clients the repository
 * depends on (DynamoDB, SQS, Scheduler): S3, SSM, CloudFormation, Lambda, STS and EventBridge,
 * as SigV4-signed HTTP requests to moto server. No extra dependency: the signer is the one the
 * typed client uses, and the XML answers of the query APIs are read by {@link parseXml}.
 */
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';

/** Where and as whom the harness calls moto. */
export interface AwsEndpoint {
  /** `http://127.0.0.1:PORT` (moto server: one endpoint for every service). */
  endpoint: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

/** An AWS answer other than 2xx. */
export class AwsApiError extends Error {
  constructor(
    readonly service: string,
    readonly action: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(`${service} ${action} answered ${status}: ${body.slice(0, 600)}`);
    this.name = 'AwsApiError';
  }
}

interface RawRequest {
  service: string;
  /** For error messages. */
  action: string;
  method: string;
  path: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
}

/** Sends one signed request; resolves to the answer's text, throws {@link AwsApiError} on non-2xx. */
export async function awsRequest(target: AwsEndpoint, request: RawRequest): Promise<string> {
  const url = new URL(target.endpoint);
  const signer = new SignatureV4({
    service: request.service,
    region: target.region,
    credentials: target.credentials,
    sha256: Sha256,
  });
  const signed = await signer.sign({
    method: request.method,
    protocol: url.protocol,
    hostname: url.hostname,
    ...(url.port ? { port: Number(url.port) } : {}),
    path: request.path,
    query: request.query ?? {},
    headers: { host: url.host, ...request.headers },
    ...(request.body === undefined ? {} : { body: request.body }),
  });
  const search = new URLSearchParams(request.query ?? {}).toString();
  const response = await fetch(`${target.endpoint}${request.path}${search ? `?${search}` : ''}`, {
    method: request.method,
    headers: signed.headers as Record<string, string>,
    ...(request.body === undefined ? {} : { body: request.body }),
  });
  const text = await response.text();
  if (!response.ok) throw new AwsApiError(request.service, request.action, response.status, text);
  return text;
}

/** A query-protocol call (CloudFormation, STS): form-encoded parameters, XML answer. */
export async function queryCall(
  target: AwsEndpoint,
  service: string,
  version: string,
  action: string,
  params: Record<string, string>,
): Promise<XmlNode> {
  const body = new URLSearchParams({ Action: action, Version: version, ...params }).toString();
  const text = await awsRequest(target, {
    service,
    action,
    method: 'POST',
    path: '/',
    headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
    body,
  });
  return parseXml(text);
}

/** A JSON 1.1 call (SSM, EventBridge): `X-Amz-Target: <prefix>.<action>`. */
export async function jsonCall<T>(
  target: AwsEndpoint,
  service: string,
  targetPrefix: string,
  action: string,
  input: unknown,
): Promise<T> {
  const text = await awsRequest(target, {
    service,
    action,
    method: 'POST',
    path: '/',
    headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': `${targetPrefix}.${action}` },
    body: JSON.stringify(input),
  });
  return (text ? JSON.parse(text) : {}) as T;
}

/** A REST-JSON call (Lambda). */
export async function restJsonCall<T>(
  target: AwsEndpoint,
  service: string,
  action: string,
  method: string,
  path: string,
  input?: unknown,
): Promise<T> {
  const text = await awsRequest(target, {
    service,
    action,
    method,
    path,
    ...(input === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(input) }),
  });
  return (text ? JSON.parse(text) : {}) as T;
}

// ---------------------------------------------------------------------------------------------
// XML (the answers of the query APIs): elements and text only, which is all they contain.

/** One XML element: its name, its child elements and its text. */
export interface XmlNode {
  name: string;
  children: XmlNode[];
  text: string;
}

const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|\w+);/gi, (whole, code: string) => {
    if (code.startsWith('#x') || code.startsWith('#X')) return String.fromCodePoint(Number.parseInt(code.slice(2), 16));
    if (code.startsWith('#')) return String.fromCodePoint(Number(code.slice(1)));
    return ENTITIES[code] ?? whole;
  });
}

/** Parses an XML document into a tree of {@link XmlNode}s (attributes, comments and declarations are dropped). */
export function parseXml(xml: string): XmlNode {
  const root: XmlNode = { name: '#document', children: [], text: '' };
  const stack: XmlNode[] = [root];
  const token = /<!\[CDATA\[([\s\S]*?)\]\]>|<(\/?)([A-Za-z_][\w:.-]*)[^>]*?(\/?)>|<[?!][^>]*>|([^<]+)/g;
  for (const match of xml.matchAll(token)) {
    const [, cdata, closing, name, selfClosing, text] = match;
    const top = stack[stack.length - 1] as XmlNode;
    if (cdata !== undefined) top.text += cdata;
    else if (text !== undefined) top.text += decodeEntities(text);
    else if (name !== undefined && closing) stack.pop();
    else if (name !== undefined) {
      const node: XmlNode = { name: name.replace(/^.*:/, ''), children: [], text: '' };
      top.children.push(node);
      if (!selfClosing) stack.push(node);
    }
  }
  return root;
}

/** Every descendant element named `name` (depth first). */
export function xmlFindAll(node: XmlNode, name: string): XmlNode[] {
  const found: XmlNode[] = [];
  for (const child of node.children) {
    if (child.name === name) found.push(child);
    found.push(...xmlFindAll(child, name));
  }
  return found;
}

/** The trimmed text of the first descendant named `name`, or undefined. */
export function xmlText(node: XmlNode, name: string): string | undefined {
  return xmlFindAll(node, name)[0]?.text.trim();
}

/** The direct children of the first descendant named `listName` (e.g. the `member`s of `Outputs`). */
export function xmlList(node: XmlNode, listName: string): XmlNode[] {
  return xmlFindAll(node, listName)[0]?.children ?? [];
}

/** A record of the direct children's trimmed text (`{ OutputKey: 'ApiUrl', OutputValue: '...' }`). */
export function xmlRecord(node: XmlNode): Record<string, string> {
  return Object.fromEntries(node.children.map((child) => [child.name, child.text.trim()]));
}

// ---------------------------------------------------------------------------------------------
// The calls the harness makes.

/** S3 CreateBucket (path style, us-east-1 form); an existing bucket of ours is fine. */
export async function createBucket(target: AwsEndpoint, bucket: string): Promise<void> {
  try {
    await awsRequest(target, { service: 's3', action: 'CreateBucket', method: 'PUT', path: `/${bucket}` });
  } catch (error) {
    if (!(error instanceof AwsApiError && /BucketAlreadyOwnedByYou/.test(error.body))) throw error;
  }
}

/** S3 PutObject. */
export async function putObject(target: AwsEndpoint, bucket: string, key: string, body: Uint8Array | string) {
  await awsRequest(target, {
    service: 's3',
    action: 'PutObject',
    method: 'PUT',
    path: `/${bucket}/${key.split('/').map(encodeURIComponent).join('/')}`,
    headers: { 'content-type': 'application/octet-stream' },
    body,
  });
}

/** SSM PutParameter (String, overwriting). */
export async function putParameter(target: AwsEndpoint, name: string, value: string): Promise<void> {
  await jsonCall(target, 'ssm', 'AmazonSSM', 'PutParameter', {
    Name: name,
    Value: value,
    Type: 'String',
    Overwrite: true,
  });
}

const CFN_VERSION = '2010-05-15';

/** CloudFormation CreateStack from an S3 template URL; returns the stack id. */
export async function createStack(
  target: AwsEndpoint,
  input: { stackName: string; templateUrl: string; capabilities: string[] },
): Promise<string> {
  const params: Record<string, string> = { StackName: input.stackName, TemplateURL: input.templateUrl };
  input.capabilities.forEach((capability, i) => {
    params[`Capabilities.member.${i + 1}`] = capability;
  });
  const answer = await queryCall(target, 'cloudformation', CFN_VERSION, 'CreateStack', params);
  return xmlText(answer, 'StackId') ?? input.stackName;
}

/** A stack as DescribeStacks shows it. */
export interface StackDescription {
  stackId: string;
  stackName: string;
  status: string;
  statusReason?: string;
  outputs: Record<string, string>;
}

export async function describeStack(target: AwsEndpoint, stackName: string): Promise<StackDescription> {
  const answer = await queryCall(target, 'cloudformation', CFN_VERSION, 'DescribeStacks', { StackName: stackName });
  const stack = xmlList(answer, 'Stacks')[0];
  if (!stack) throw new Error(`DescribeStacks found no stack ${stackName}`);
  const outputs: Record<string, string> = {};
  for (const output of xmlList(stack, 'Outputs')) {
    const record = xmlRecord(output);
    if (record.OutputKey) outputs[record.OutputKey] = record.OutputValue ?? '';
  }
  const fields = xmlRecord(stack);
  return {
    stackId: fields.StackId ?? stackName,
    stackName: fields.StackName ?? stackName,
    status: fields.StackStatus ?? 'UNKNOWN',
    ...(fields.StackStatusReason ? { statusReason: fields.StackStatusReason } : {}),
    outputs,
  };
}

/** The failure events of a stack (resource, status, reason), for error messages. */
export async function stackFailures(target: AwsEndpoint, stackName: string): Promise<string[]> {
  const answer = await queryCall(target, 'cloudformation', CFN_VERSION, 'DescribeStackEvents', {
    StackName: stackName,
  });
  return xmlList(answer, 'StackEvents')
    .map(xmlRecord)
    .filter((event) => /FAILED/.test(event.ResourceStatus ?? ''))
    .map((event) => `${event.LogicalResourceId} ${event.ResourceStatus}: ${event.ResourceStatusReason ?? ''}`);
}

/** One resource of a stack. */
export interface StackResource {
  logicalId: string;
  physicalId: string;
  type: string;
  status: string;
}

export async function listStackResources(target: AwsEndpoint, stackName: string): Promise<StackResource[]> {
  const resources: StackResource[] = [];
  let nextToken: string | undefined;
  do {
    const answer = await queryCall(target, 'cloudformation', CFN_VERSION, 'ListStackResources', {
      StackName: stackName,
      ...(nextToken ? { NextToken: nextToken } : {}),
    });
    for (const member of xmlList(answer, 'StackResourceSummaries')) {
      const r = xmlRecord(member);
      resources.push({
        logicalId: r.LogicalResourceId ?? '',
        physicalId: r.PhysicalResourceId ?? '',
        type: r.ResourceType ?? '',
        status: r.ResourceStatus ?? '',
      });
    }
    nextToken = xmlText(answer, 'NextToken') || undefined;
  } while (nextToken);
  return resources;
}

/** What GetFunctionConfiguration answers (the fields the harness uses). */
export interface FunctionConfiguration {
  FunctionName: string;
  FunctionArn: string;
  Role: string;
  Handler: string;
  Runtime?: string;
  Timeout?: number;
  MemorySize?: number;
  Architectures?: string[];
  Environment?: { Variables?: Record<string, string> };
  LoggingConfig?: { LogGroup?: string; LogFormat?: string };
  ReservedConcurrentExecutions?: number;
}

export async function getFunctionConfiguration(target: AwsEndpoint, name: string): Promise<FunctionConfiguration> {
  return restJsonCall(
    target,
    'lambda',
    'GetFunctionConfiguration',
    'GET',
    `/2015-03-31/functions/${encodeURIComponent(name)}/configuration`,
  );
}

/**
 * A function's resource policy (Lambda GetPolicy), or undefined when it has none, in the shape AWS
 * answers: moto echoes each AddPermission's parameters as statement keys (`FunctionName`,
 * `FunctionUrlAuthType`, `InvokedViaFunctionUrl`, a bare principal ARN), which are turned into the
 * statement AWS writes for them (a `Condition` on `lambda:FunctionUrlAuthType` or
 * `lambda:InvokedViaFunctionUrl`, `Principal: { AWS }`).
 */
export async function getFunctionPolicy(target: AwsEndpoint, name: string): Promise<PolicyOfFunction | undefined> {
  let text: string | undefined;
  try {
    ({ Policy: text } = await restJsonCall<{ Policy?: string }>(
      target,
      'lambda',
      'GetPolicy',
      'GET',
      `/2015-03-31/functions/${encodeURIComponent(name)}/policy`,
    ));
  } catch (error) {
    if (error instanceof AwsApiError && error.status === 404) return undefined;
    throw error;
  }
  if (!text) return undefined;
  const policy = JSON.parse(text) as PolicyOfFunction;
  return { ...policy, Statement: policy.Statement.map(asAwsStatement) };
}

export interface PolicyOfFunction {
  Version: string;
  Id?: string;
  Statement: Record<string, unknown>[];
}

function asAwsStatement(statement: Record<string, unknown>): Record<string, unknown> {
  const { FunctionName: _name, FunctionUrlAuthType, InvokedViaFunctionUrl, Principal, ...rest } = statement;
  const condition: Record<string, Record<string, string>> = {
    ...((rest.Condition as Record<string, Record<string, string>> | undefined) ?? {}),
  };
  if (typeof FunctionUrlAuthType === 'string') {
    condition.StringEquals = { ...condition.StringEquals, 'lambda:FunctionUrlAuthType': FunctionUrlAuthType };
  }
  if (InvokedViaFunctionUrl === true || InvokedViaFunctionUrl === 'true') {
    condition.Bool = { ...condition.Bool, 'lambda:InvokedViaFunctionUrl': 'true' };
  }
  return {
    ...rest,
    Principal: typeof Principal === 'string' && Principal !== '*' ? { AWS: Principal } : Principal,
    ...(Object.keys(condition).length > 0 ? { Condition: condition } : {}),
  };
}

/** What ListEventSourceMappings answers (the fields the harness uses). */
export interface EventSourceMapping {
  UUID: string;
  EventSourceArn: string;
  FunctionArn: string;
  BatchSize?: number;
  State?: string;
  FunctionResponseTypes?: string[];
  ScalingConfig?: { MaximumConcurrency?: number };
  MaximumBatchingWindowInSeconds?: number;
}

export async function listEventSourceMappings(target: AwsEndpoint): Promise<EventSourceMapping[]> {
  const mappings: EventSourceMapping[] = [];
  let marker: string | undefined;
  do {
    const page = await restJsonCall<{ EventSourceMappings?: EventSourceMapping[]; NextMarker?: string }>(
      target,
      'lambda',
      'ListEventSourceMappings',
      'GET',
      `/2015-03-31/event-source-mappings/${marker ? `?Marker=${encodeURIComponent(marker)}` : ''}`,
    );
    mappings.push(...(page.EventSourceMappings ?? []));
    marker = page.NextMarker || undefined;
  } while (marker);
  return mappings;
}

export async function setEventSourceMappingEnabled(target: AwsEndpoint, uuid: string, enabled: boolean) {
  await restJsonCall(
    target,
    'lambda',
    'UpdateEventSourceMapping',
    'PUT',
    `/2015-03-31/event-source-mappings/${encodeURIComponent(uuid)}`,
    { Enabled: enabled },
  );
}

/** Temporary credentials from STS AssumeRole. */
export interface AssumedRole {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  /** `arn:aws:sts::<account>:assumed-role/<role>/<session>` */
  assumedRoleArn: string;
  expiration: string;
}

export async function assumeRole(target: AwsEndpoint, roleArn: string, sessionName: string): Promise<AssumedRole> {
  const answer = await queryCall(target, 'sts', '2011-06-15', 'AssumeRole', {
    RoleArn: roleArn,
    RoleSessionName: sessionName,
    DurationSeconds: '43200',
  });
  const credentials = xmlRecord(xmlFindAll(answer, 'Credentials')[0] ?? { name: '', children: [], text: '' });
  if (!credentials.AccessKeyId || !credentials.SecretAccessKey || !credentials.SessionToken) {
    throw new Error(`AssumeRole of ${roleArn} returned no credentials`);
  }
  return {
    accessKeyId: credentials.AccessKeyId,
    secretAccessKey: credentials.SecretAccessKey,
    sessionToken: credentials.SessionToken,
    assumedRoleArn: xmlText(answer, 'Arn') ?? '',
    expiration: credentials.Expiration ?? '',
  };
}

/** An EventBridge rule and the Lambda functions it targets. */
export interface ScheduledRule {
  name: string;
  arn: string;
  scheduleExpression?: string;
  state?: string;
  targets: { id: string; arn: string; input?: string }[];
}

export async function describeRule(target: AwsEndpoint, name: string): Promise<ScheduledRule> {
  const rule = await jsonCall<{ Name: string; Arn: string; ScheduleExpression?: string; State?: string }>(
    target,
    'events',
    'AWSEvents',
    'DescribeRule',
    { Name: name },
  );
  const targets = await jsonCall<{ Targets?: { Id: string; Arn: string; Input?: string }[] }>(
    target,
    'events',
    'AWSEvents',
    'ListTargetsByRule',
    { Rule: name },
  );
  return {
    name: rule.Name,
    arn: rule.Arn,
    ...(rule.ScheduleExpression ? { scheduleExpression: rule.ScheduleExpression } : {}),
    ...(rule.State ? { state: rule.State } : {}),
    targets: (targets.Targets ?? []).map((t) => ({ id: t.Id, arn: t.Arn, ...(t.Input ? { input: t.Input } : {}) })),
  };
}

/** A role's policies as IAM resolved them (documents parsed): inline by name, and attached managed ones. */
export interface RolePolicies {
  roleArn: string;
  inline: Record<string, unknown>;
  managed: { arn: string; document?: unknown }[];
}

const IAM_VERSION = '2010-05-08';

export async function getRolePolicies(target: AwsEndpoint, roleArn: string): Promise<RolePolicies> {
  const roleName = roleArn.slice(roleArn.lastIndexOf('/') + 1);
  const iam = (action: string, params: Record<string, string>) => queryCall(target, 'iam', IAM_VERSION, action, params);
  const decode = (text: string | undefined) => (text ? JSON.parse(decodeURIComponent(text)) : undefined);
  const inline: Record<string, unknown> = {};
  const names = xmlList(await iam('ListRolePolicies', { RoleName: roleName }), 'PolicyNames').map((n) => n.text.trim());
  for (const name of names) {
    const answer = await iam('GetRolePolicy', { RoleName: roleName, PolicyName: name });
    inline[name] = decode(xmlText(answer, 'PolicyDocument'));
  }
  const managed: RolePolicies['managed'] = [];
  const attached = xmlList(await iam('ListAttachedRolePolicies', { RoleName: roleName }), 'AttachedPolicies');
  for (const policy of attached.map(xmlRecord)) {
    if (!policy.PolicyArn) continue;
    try {
      const meta = await iam('GetPolicy', { PolicyArn: policy.PolicyArn });
      const version = xmlText(meta, 'DefaultVersionId') ?? 'v1';
      const doc = await iam('GetPolicyVersion', { PolicyArn: policy.PolicyArn, VersionId: version });
      managed.push({ arn: policy.PolicyArn, document: decode(xmlText(doc, 'Document')) });
    } catch {
      managed.push({ arn: policy.PolicyArn }); // an AWS managed policy moto does not hold
    }
  }
  return { roleArn, inline, managed };
}
