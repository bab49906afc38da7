/**
 * AWS's deploy-time quotas, checked on a synthesized cloud assembly with every value resolved
 * the way CloudFormation would resolve it in a real account: a queue's `Ref` is its full URL, a
 * generated physical name is as long as AWS may make it, pseudo parameters are a real Region's
 * and account's. Emulators check none of these (moto checks no environment size; LocalStack
 * checks that one only), so a template that deploys on them can still fail in AWS.
 *
 * The limits (see ../shared/AWS-FACTS.md, "Deploy-time quotas"):
 * - Lambda: all of a function's environment variables together ≤ 4 KB (measured, as Lambda
 *   reports it, on the JSON of the variables: `environmentBytes`, the rule OrreryFunction checks
 *   at synthesis with unresolved values estimated, here on the values resolved).
 * - CloudFormation: ≤ 500 resources, ≤ 200 outputs, ≤ 200 parameters per stack; a template
 *   ≤ 1 MB (uploaded to S3, as the CDK does).
 * - IAM: the inline policies of one role ≤ 10,240 characters together, a managed policy
 *   ≤ 6,144 (whitespace not counted).
 * - CloudWatch: a dashboard ≤ 500 widgets.
 * - SSM: a Standard parameter's value ≤ 4,096 characters, an Advanced one's ≤ 8 KB (the grants).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { JobPlatform } from '../../infra/constructs/job-platform';
import { environmentBytes, LAMBDA_ENVIRONMENT_BYTES } from '../../infra/constructs/lambda-environment';
import { defineJobType } from '../../shared/core/job-type';
import { z } from '../../shared/core/zod-mini';

export const QUOTAS = {
  lambdaEnvironmentBytes: LAMBDA_ENVIRONMENT_BYTES,
  stackResources: 500,
  stackOutputs: 200,
  stackParameters: 200,
  templateBytes: 1_048_576,
  roleInlinePolicyChars: 10_240,
  managedPolicyChars: 6_144,
  dashboardWidgets: 500,
  standardParameterBytes: 4096,
  advancedParameterBytes: 8192,
} as const;

/** A long real Region and a real-looking account: names and URLs as long as they get. */
const REGION = 'ap-southeast-3';
const ACCOUNT = '123456789012';
/** Context that makes every NodejsFunction skip bundling (as `SKIP_BUNDLING` in ./support.ts; kept here so scripts outside vitest can use this module). */
const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [], 'aws:cdk:enable-asset-metadata': true };
const PARTITION = 'aws';
const URL_SUFFIX = 'amazonaws.com';

/** The longest physical name AWS may generate per resource type (used when a template names none). */
const MAX_NAME: Record<string, number> = {
  'AWS::SQS::Queue': 80,
  'AWS::DynamoDB::Table': 255,
  'AWS::IAM::Role': 64,
  'AWS::IAM::User': 64,
  'AWS::IAM::Policy': 128,
  'AWS::IAM::ManagedPolicy': 128,
  'AWS::Lambda::Function': 64,
  'AWS::Logs::LogGroup': 512,
  'AWS::Events::Rule': 64,
  'AWS::Scheduler::ScheduleGroup': 64,
  'AWS::CloudWatch::Alarm': 255,
  'AWS::CloudWatch::Dashboard': 255,
  'AWS::SNS::Topic': 256,
  'AWS::CloudFormation::Stack': 128,
};

interface Resource {
  Type: string;
  Properties?: Record<string, unknown>;
  Metadata?: Record<string, unknown>;
}

interface TemplateJson {
  Resources?: Record<string, Resource>;
  Outputs?: Record<string, { Value: unknown }>;
  Parameters?: Record<string, unknown>;
}

/** One stack of the assembly, nested or not, with what it was given. */
export interface StackUnderTest {
  /** `Parent/NestedId` path. */
  name: string;
  /** The deployed stack name CloudFormation uses for it (nested stacks get a generated, long one). */
  stackName: string;
  template: TemplateJson;
  templateBytes: number;
  /** Resolved values of its parameters (a nested stack's, from its parent). */
  parameters: Record<string, string>;
  /** Resolved values of its outputs, for the parent's `Fn::GetAtt [Nested, Outputs.X]`. */
  outputs: Record<string, string>;
}

/** Synthesizes `app` and reads every stack, nested ones included, resolving each as AWS would. */
export function readAssembly(app: App): StackUnderTest[] {
  const assembly = app.synth();
  const found: StackUnderTest[] = [];
  for (const artifact of assembly.stacks) {
    visit(assembly.directory, artifact.templateFile, artifact.stackName, artifact.stackName, {}, found);
  }
  return found;
}

function visit(
  dir: string,
  file: string,
  name: string,
  stackName: string,
  parameters: Record<string, string>,
  found: StackUnderTest[],
): StackUnderTest {
  const text = readFileSync(join(dir, file), 'utf8');
  const template = JSON.parse(text) as TemplateJson;
  const stack: StackUnderTest = {
    name,
    stackName,
    template,
    templateBytes: Buffer.byteLength(text),
    parameters,
    outputs: {},
  };
  found.push(stack);
  const resolver = new Resolver(stack);
  for (const [id, resource] of Object.entries(template.Resources ?? {})) {
    if (resource.Type !== 'AWS::CloudFormation::Stack') continue;
    const nestedFile = resource.Metadata?.['aws:asset:path'];
    if (typeof nestedFile !== 'string') {
      throw new Error(
        `nested stack ${id} of ${name} has no asset path (synthesize with 'aws:cdk:enable-asset-metadata')`,
      );
    }
    const given = (resource.Properties?.Parameters ?? {}) as Record<string, unknown>;
    const nestedParams = Object.fromEntries(Object.entries(given).map(([k, v]) => [k, resolver.resolve(v)]));
    const nested = visit(
      dir,
      nestedFile,
      `${name}/${id}`,
      generatedName(`${stackName}-${id}`, 128),
      nestedParams,
      found,
    );
    resolver.nested.set(id, nested);
  }
  for (const [id, output] of Object.entries(template.Outputs ?? {})) {
    stack.outputs[id] = resolver.resolve(output.Value);
  }
  return stack;
}

/** A generated physical name padded to the longest AWS may make it. */
function generatedName(base: string, max: number): string {
  const suffix = '-ABCDEFGHIJKLM';
  const full = `${base}${suffix}`;
  return full.length >= max ? full.slice(0, max) : `${full}${'X'.repeat(max - full.length)}`;
}

/** Resolves CloudFormation values of one stack the way CloudFormation would in {@link REGION}. */
export class Resolver {
  readonly nested = new Map<string, StackUnderTest>();
  constructor(private readonly stack: StackUnderTest) {}

  private physicalName(id: string): string {
    const resource = this.stack.template.Resources?.[id];
    if (!resource) throw new Error(`${this.stack.name}: no resource ${id}`);
    const props = resource.Properties ?? {};
    const explicit: Record<string, string> = {
      'AWS::SQS::Queue': 'QueueName',
      'AWS::DynamoDB::Table': 'TableName',
      'AWS::IAM::Role': 'RoleName',
      'AWS::Lambda::Function': 'FunctionName',
      'AWS::Scheduler::ScheduleGroup': 'Name',
      'AWS::Logs::LogGroup': 'LogGroupName',
      'AWS::CloudWatch::Dashboard': 'DashboardName',
    };
    const key = explicit[resource.Type];
    if (key && props[key] !== undefined) return this.resolve(props[key]);
    return generatedName(`${this.stack.stackName}-${id}`, MAX_NAME[resource.Type] ?? 128);
  }

  private ref(id: string): string {
    const pseudo: Record<string, string> = {
      'AWS::Region': REGION,
      'AWS::AccountId': ACCOUNT,
      'AWS::Partition': PARTITION,
      'AWS::URLSuffix': URL_SUFFIX,
      'AWS::StackName': this.stack.stackName,
      'AWS::StackId': `arn:${PARTITION}:cloudformation:${REGION}:${ACCOUNT}:stack/${this.stack.stackName}/12345678-1234-1234-1234-123456789012`,
      'AWS::NoValue': '',
    };
    if (pseudo[id] !== undefined) return pseudo[id];
    if (this.stack.parameters[id] !== undefined) return this.stack.parameters[id];
    const parameter = this.stack.template.Parameters?.[id] as { Default?: string } | undefined;
    if (parameter) {
      if (parameter.Default !== undefined) return String(parameter.Default);
      throw new Error(`${this.stack.name}: parameter ${id} has no value`);
    }
    const resource = this.stack.template.Resources?.[id];
    if (!resource) throw new Error(`${this.stack.name}: Ref to unknown ${id}`);
    const name = this.physicalName(id);
    switch (resource.Type) {
      case 'AWS::SQS::Queue':
        return `https://sqs.${REGION}.${URL_SUFFIX}/${ACCOUNT}/${name}`;
      case 'AWS::IAM::ManagedPolicy':
        return `arn:${PARTITION}:iam::${ACCOUNT}:policy/${name}`;
      case 'AWS::SNS::Topic':
        return `arn:${PARTITION}:sns:${REGION}:${ACCOUNT}:${name}`;
      default:
        return name;
    }
  }

  private getAtt(id: string, attribute: string): string {
    if (attribute.startsWith('Outputs.')) {
      const nested = this.nested.get(id);
      const value = nested?.outputs[attribute.slice('Outputs.'.length)];
      if (value === undefined) throw new Error(`${this.stack.name}: no output ${attribute} of ${id}`);
      return value;
    }
    const resource = this.stack.template.Resources?.[id];
    if (!resource) throw new Error(`${this.stack.name}: GetAtt of unknown ${id}`);
    const name = this.physicalName(id);
    const arn = (service: string, rest: string, region = REGION) =>
      `arn:${PARTITION}:${service}:${region}:${region === '' ? '' : ACCOUNT}:${rest}`;
    switch (`${resource.Type}.${attribute}`) {
      case 'AWS::SQS::Queue.Arn':
        return arn('sqs', name);
      case 'AWS::SQS::Queue.QueueName':
        return name;
      case 'AWS::SQS::Queue.QueueUrl':
        return `https://sqs.${REGION}.${URL_SUFFIX}/${ACCOUNT}/${name}`;
      case 'AWS::DynamoDB::Table.Arn':
        return arn('dynamodb', `table/${name}`);
      case 'AWS::DynamoDB::Table.StreamArn':
        return arn('dynamodb', `table/${name}/stream/2026-01-01T00:00:00.000`);
      case 'AWS::IAM::Role.Arn':
        return `arn:${PARTITION}:iam::${ACCOUNT}:role/${name}`;
      case 'AWS::Lambda::Function.Arn':
        return arn('lambda', `function:${name}`);
      case 'AWS::Lambda::Url.FunctionUrl':
        return `https://${'a'.repeat(32)}.lambda-url.${REGION}.on.aws/`;
      case 'AWS::Logs::LogGroup.Arn':
        return arn('logs', `log-group:${name}:*`);
      case 'AWS::Scheduler::ScheduleGroup.Arn':
        return arn('scheduler', `schedule-group/${name}`);
      case 'AWS::CloudWatch::Alarm.Arn':
        return arn('cloudwatch', `alarm:${name}`);
      case 'AWS::Events::Rule.Arn':
        return arn('events', `rule/${name}`);
      case 'AWS::SNS::Topic.TopicArn':
        return arn('sns', name);
      case 'AWS::S3::Bucket.Arn':
        return arn('s3', name, '');
      default:
        throw new Error(`${this.stack.name}: cannot resolve GetAtt ${resource.Type}.${attribute} (${id})`);
    }
  }

  /** The value as CloudFormation would give it to the resource. */
  resolve(value: unknown): string {
    if (typeof value === 'string') return value;
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
    if (!value || typeof value !== 'object' || Array.isArray(value)) {
      throw new Error(`${this.stack.name}: cannot resolve ${JSON.stringify(value)}`);
    }
    const node = value as Record<string, unknown>;
    const [fn] = Object.keys(node);
    const arg = node[fn as string];
    switch (fn) {
      case 'Ref':
        return this.ref(arg as string);
      case 'Fn::GetAtt': {
        const [id, attribute] = Array.isArray(arg) ? (arg as string[]) : String(arg).split(/\.(.*)/);
        return this.getAtt(id as string, attribute as string);
      }
      case 'Fn::Join': {
        const [delimiter, parts] = arg as [string, unknown[]];
        return parts.map((part) => this.resolve(part)).join(delimiter);
      }
      case 'Fn::Select': {
        const [index, list] = arg as [number | string, unknown];
        return this.list(list)[Number(index)] ?? '';
      }
      case 'Fn::Sub': {
        const [text, vars] = Array.isArray(arg) ? (arg as [string, Record<string, unknown>]) : [arg as string, {}];
        return text.replace(/\$\{([^}]+)\}/g, (_, name: string) =>
          vars[name] !== undefined
            ? this.resolve(vars[name])
            : name.includes('.')
              ? this.getAtt(name.split('.')[0] as string, name.split('.').slice(1).join('.'))
              : this.ref(name),
        );
      }
      case 'Fn::ImportValue':
        return `imported-${this.resolve(arg)}`;
      default:
        throw new Error(`${this.stack.name}: cannot resolve ${fn}`);
    }
  }

  private list(value: unknown): string[] {
    if (Array.isArray(value)) return value.map((v) => this.resolve(v));
    const node = value as Record<string, unknown>;
    if (node['Fn::Split']) {
      const [delimiter, source] = node['Fn::Split'] as [string, unknown];
      return this.resolve(source).split(delimiter);
    }
    if (node['Fn::GetAZs'] !== undefined) return [`${REGION}a`, `${REGION}b`, `${REGION}c`];
    throw new Error(`${this.stack.name}: cannot resolve a list from ${JSON.stringify(value)}`);
  }

  /** Resolves every intrinsic inside a JSON value (objects and arrays kept). */
  deep(value: unknown): unknown {
    if (Array.isArray(value)) return value.map((v) => this.deep(v));
    if (value && typeof value === 'object') {
      const keys = Object.keys(value);
      if (keys.length === 1 && (keys[0] === 'Ref' || keys[0]?.startsWith('Fn::'))) return this.resolve(value);
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.deep(v)]));
    }
    return value;
  }
}

/** One figure measured against its quota. */
export interface Figure {
  stack: string;
  /** What was measured, e.g. `environment of ApiHandler`. */
  what: string;
  value: number;
  limit: number;
}

/** Every quota figure of every stack: environment per function, counts, sizes, policies, widgets. */
export function measure(stacks: StackUnderTest[]): Figure[] {
  const figures: Figure[] = [];
  for (const stack of stacks) {
    const resolver = new Resolver(stack);
    for (const nested of stacks) {
      if (nested.name.startsWith(`${stack.name}/`) && !nested.name.slice(stack.name.length + 1).includes('/')) {
        resolver.nested.set(nested.name.slice(stack.name.length + 1), nested);
      }
    }
    const add = (what: string, value: number, limit: number) => figures.push({ stack: stack.name, what, value, limit });
    const resources = Object.entries(stack.template.Resources ?? {});
    add('resources', resources.length, QUOTAS.stackResources);
    add('outputs', Object.keys(stack.template.Outputs ?? {}).length, QUOTAS.stackOutputs);
    add('parameters', Object.keys(stack.template.Parameters ?? {}).length, QUOTAS.stackParameters);
    add('template bytes', stack.templateBytes, QUOTAS.templateBytes);

    const inlineByRole = new Map<string, number>();
    for (const [id, resource] of resources) {
      const props = resource.Properties ?? {};
      if (resource.Type === 'AWS::Lambda::Function') {
        const variables = (props.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {};
        const resolved = Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, resolver.resolve(v)]));
        add(`environment of ${id}`, environmentBytes(resolved), QUOTAS.lambdaEnvironmentBytes);
      }
      if (resource.Type === 'AWS::IAM::Policy') {
        const size = policyChars(resolver.deep(props.PolicyDocument));
        for (const role of (props.Roles as unknown[] | undefined) ?? []) {
          const roleName = resolver.resolve(role);
          inlineByRole.set(roleName, (inlineByRole.get(roleName) ?? 0) + size);
        }
      }
      if (resource.Type === 'AWS::IAM::Role') {
        const inline = (props.Policies as { PolicyDocument: unknown }[] | undefined) ?? [];
        const roleName = resolver.resolve({ Ref: id });
        const size = inline.reduce((sum, p) => sum + policyChars(resolver.deep(p.PolicyDocument)), 0);
        inlineByRole.set(roleName, (inlineByRole.get(roleName) ?? 0) + size);
      }
      if (resource.Type === 'AWS::IAM::ManagedPolicy') {
        add(`managed policy ${id}`, policyChars(resolver.deep(props.PolicyDocument)), QUOTAS.managedPolicyChars);
      }
      if (resource.Type === 'AWS::SSM::Parameter') {
        const limit = props.Tier === 'Advanced' ? QUOTAS.advancedParameterBytes : QUOTAS.standardParameterBytes;
        add(`value of SSM parameter ${id}`, Buffer.byteLength(resolver.resolve(props.Value), 'utf8'), limit);
      }
      if (resource.Type === 'AWS::CloudWatch::Dashboard') {
        const body = JSON.parse(resolver.resolve(props.DashboardBody)) as { widgets?: unknown[] };
        add(`widgets of ${id}`, body.widgets?.length ?? 0, QUOTAS.dashboardWidgets);
      }
    }
    for (const [role, size] of inlineByRole) add(`inline policies of role ${role}`, size, QUOTAS.roleInlinePolicyChars);
  }
  return figures;
}

/** IAM counts a policy's characters without whitespace. */
function policyChars(document: unknown): number {
  return JSON.stringify(document).replace(/\s/g, '').length;
}

/** The figures over their limit. */
export function overQuota(figures: Figure[]): Figure[] {
  return figures.filter((figure) => figure.value > figure.limit);
}

/** The largest figure of each kind (environment, resources, ...), for reports. */
export function largest(figures: Figure[], kind: string): Figure | undefined {
  return figures
    .filter((figure) => figure.what.startsWith(kind))
    .reduce<Figure | undefined>((top, figure) => (!top || figure.value > top.value ? figure : top), undefined);
}

/** A job type name of the longest length allowed (40), so names, ARNs and URLs are as long as they get. */
export function longTypeName(i: number): string {
  const head = `type-${String(i).padStart(3, '0')}-`;
  return `${head}${'x'.repeat(40 - head.length)}`;
}

/** An app with `count` job types of 40-character names in one JobPlatform, synthesized without bundling. */
export function appWithTypes(count: number, outdir: string, options: { resourceLimit?: boolean } = {}): App {
  // `@aws-cdk/core:stackResourceLimit` 0 turns off CDK's own check of CloudFormation's 500 resources
  const limit = options.resourceLimit === false ? { '@aws-cdk/core:stackResourceLimit': 0 } : {};
  const app = new App({ outdir, context: { ...NO_BUNDLING, ...limit } });
  const stack = new Stack(app, 'OrreryGenerated');
  const platform = new JobPlatform(stack, 'Platform');
  for (let i = 0; i < count; i++) {
    const spec = defineJobType({ type: longTypeName(i), payload: z.object({ n: z.number() }) });
    platform.addJobType({ spec, entry: 'functions/jobs/echo.ts' });
  }
  return app;
}
