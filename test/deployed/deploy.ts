/**
 * Deploying the synthesized assembly onto moto's CloudFormation, as `cdk deploy` would onto an
 * account: what `cdk bootstrap` leaves behind (the assets bucket, the bootstrap version
 * parameter), the assets published, each stack's template (patched for moto on a copy, see
 * moto-patches.ts) created from S3, then everything the Lambda host needs read back from moto:
 * outputs, each function's deployed configuration, the event source mappings, the scheduled
 * rules and the Function URLs.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CreateScheduleGroupCommand, GetScheduleGroupCommand } from '@aws-sdk/client-scheduler';
import type { LocalClients } from '../local-aws/clients';
import { type AssemblyStack, bundleDirOf, type CloudAssembly, type Template, type TemplateResource } from './assembly';
import {
  type AwsEndpoint,
  createBucket,
  createStack,
  describeRule,
  describeStack,
  type EventSourceMapping,
  type FunctionConfiguration,
  getFunctionConfiguration,
  getFunctionPolicy,
  getRolePolicies,
  listEventSourceMappings,
  listStackResources,
  putObject,
  putParameter,
  type RolePolicies,
  type ScheduledRule,
  stackFailures,
} from './aws-api';
import { MOTO_PATCHES, type PatchContext, patchTemplate } from './moto-patches';
import { type QueuePolicy, queuePoliciesOf } from './queue-policies';

const run = promisify(execFile);

/** The CDK's default bootstrap qualifier (`cdk bootstrap` without `--qualifier`). */
const BOOTSTRAP_QUALIFIER = 'hnb659fds';
/** What `cdk bootstrap` (v2, 2024+) writes as its version; templates require ≥ 6. */
const BOOTSTRAP_VERSION = '28';
/** Where the patched templates go (moto reads templates only from `https://s3.amazonaws.com/<bucket>/<key>`). */
const TEMPLATE_BUCKET = 'orrery-harness-templates';

/** A function as deployed: its configuration on moto and its bundle in cdk.out. */
export interface DeployedFunction {
  stackName: string;
  logicalId: string;
  configuration: FunctionConfiguration;
  /** The `cdk.out` asset directory of its code. */
  bundleDir: string;
}

/** A Function URL resource and the function it invokes. */
export interface DeployedFunctionUrl {
  stackName: string;
  logicalId: string;
  url: string;
  authType: string;
  functionName: string;
  /** The function's resource policy as deployed (Lambda GetPolicy): who else may invoke it. */
  resourcePolicy?: unknown;
}

export interface DeployedApp {
  /** Outputs per stack name, as `cdk deploy --outputs-file` writes them. */
  outputs: Record<string, Record<string, string>>;
  functions: DeployedFunction[];
  functionUrls: DeployedFunctionUrl[];
  mappings: EventSourceMapping[];
  rules: ScheduledRule[];
  /** Each function's role with its policies as deployed (resolved), for the IAM check. */
  roles: RolePolicies[];
  /** The queues' resource policies, resolved from the templates (moto does not apply them), for the IAM check. */
  queuePolicies: QueuePolicy[];
  /** Which patches changed how many places, per stack; and what each after-deploy patch did. */
  patches: { stackName: string; id: string; places: number }[];
}

export interface DeployOptions {
  assembly: CloudAssembly;
  /** moto, as the harness calls it (CloudFormation, S3, Lambda...). */
  api: AwsEndpoint;
  /** SDK clients pinned to moto (Scheduler for the groups). */
  clients: LocalClients;
  account: string;
  /**
   * Serves the Function URLs the templates have (after inlining) before the deploy, and says at
   * which URL each is served; their functions are bound later (see lambda-host.ts).
   */
  serveFunctionUrls(urls: { stackName: string; logicalId: string; authType: string }[]): Promise<Map<string, string>>;
  /** Where the patched templates are written for inspection. */
  workDir: string;
  /** @default 120_000 */
  stackTimeoutMs?: number;
}

export const functionUrlKey = (stackName: string, logicalId: string) => `${stackName}/${logicalId}`;

/**
 * Deploys every stack of `assembly` in dependency order and reads back what the Lambda host needs.
 *
 * @example
 * const app = await deployAssembly({ assembly, api, clients, account, serveFunctionUrls, workDir });
 * app.outputs.Orrery.ApiUrl;
 */
export async function deployAssembly(options: DeployOptions): Promise<DeployedApp> {
  const { assembly, api, account } = options;
  const region = api.region;
  mkdirSync(join(options.workDir, 'templates'), { recursive: true });

  await bootstrap(options);
  await createBucket(api, TEMPLATE_BUCKET);

  const contextFor = (stack: AssemblyStack, functionUrl: (id: string) => string): PatchContext => ({
    stackName: stack.stackName,
    region,
    account,
    scheduleGroups: new Set(),
    functionUrl,
    nestedTemplate: (resource, logicalId) => nestedTemplateOf(assembly, resource, logicalId),
  });

  // First pass: the Function URLs of the flat templates, served before the deploy.
  const wanted: { stackName: string; logicalId: string; authType: string }[] = [];
  for (const stack of assembly.stacks) {
    const { template } = patchTemplate(
      stack.template,
      contextFor(stack, () => 'https://placeholder.invalid/'),
    );
    for (const [logicalId, resource] of Object.entries(template.Resources)) {
      if (resource.Type !== 'AWS::Lambda::Url') continue;
      wanted.push({ stackName: stack.stackName, logicalId, authType: String(resource.Properties?.AuthType ?? 'NONE') });
    }
  }
  const served = await options.serveFunctionUrls(wanted);

  const app: DeployedApp = {
    outputs: {},
    functions: [],
    functionUrls: [],
    mappings: [],
    rules: [],
    roles: [],
    queuePolicies: [],
    patches: [],
  };
  for (const stack of assembly.stacks) {
    const ctx = contextFor(stack, (logicalId) => {
      const url = served.get(functionUrlKey(stack.stackName, logicalId));
      if (!url) throw new Error(`no Function URL served for ${stack.stackName}/${logicalId}`);
      return url;
    });
    const { template, applied } = patchTemplate(stack.template, ctx);
    app.patches.push(...applied.map((a) => ({ stackName: stack.stackName, ...a })));
    for (const group of ctx.scheduleGroups) await ensureScheduleGroup(options.clients, group);

    const body = JSON.stringify(template);
    writeFileSync(
      join(options.workDir, 'templates', `${stack.stackName}.moto.template.json`),
      JSON.stringify(template, null, 1),
    );
    const key = `${stack.stackName}-${Date.now()}.template.json`;
    await putObject(api, TEMPLATE_BUCKET, key, body);
    await createStack(api, {
      stackName: stack.stackName,
      templateUrl: `https://s3.amazonaws.com/${TEMPLATE_BUCKET}/${key}`,
      capabilities: ['CAPABILITY_IAM', 'CAPABILITY_NAMED_IAM', 'CAPABILITY_AUTO_EXPAND'],
    });
    const description = await waitForStack(api, stack.stackName, options.stackTimeoutMs ?? 120_000);
    app.outputs[stack.stackName] = description.outputs;
    await readBack(options, stack, template, served, app);
  }
  app.mappings = await listEventSourceMappings(api);
  for (const roleArn of new Set(app.functions.map((fn) => fn.configuration.Role))) {
    app.roles.push(await getRolePolicies(api, roleArn));
  }

  for (const patch of MOTO_PATCHES) {
    if (!patch.afterDeploy) continue;
    const places = await patch.afterDeploy({ api, clients: options.clients });
    app.patches.push({ stackName: '*', id: patch.id, places });
  }
  return app;
}

/** What `cdk bootstrap` and the CLI's asset publishing leave in an account. */
async function bootstrap(options: DeployOptions): Promise<void> {
  const { api, assembly, account } = options;
  // The asset manifest's destinations carry CloudFormation-style placeholders.
  const pseudo: Record<string, string> = { AccountId: account, Region: api.region, Partition: 'aws' };
  const fill = (text: string) => text.replace(/\$\{AWS::(\w+)\}/g, (whole, name: string) => pseudo[name] ?? whole);
  await putParameter(api, `/cdk-bootstrap/${BOOTSTRAP_QUALIFIER}/version`, BOOTSTRAP_VERSION);
  const buckets = new Set<string>();
  const zipDir = join(options.workDir, 'assets');
  mkdirSync(zipDir, { recursive: true });
  for (const asset of assembly.assets.values()) {
    const body = await assetBody(asset.path, asset.packaging, join(zipDir, `${asset.hash}.zip`));
    for (const destination of asset.destinations) {
      const bucket = fill(destination.bucketName);
      if (!buckets.has(bucket)) {
        await createBucket(api, bucket);
        buckets.add(bucket);
      }
      await putObject(api, bucket, fill(destination.objectKey), body);
    }
  }
}

/** A file as is; a directory zipped (moto's Lambda reads each function's code from S3). */
async function assetBody(path: string, packaging: 'zip' | 'file', zipFile: string): Promise<Uint8Array> {
  if (!statSync(path).isDirectory()) return readFileSync(path);
  if (packaging !== 'zip') throw new Error(`asset ${path} is a directory but not zip-packaged`);
  await run('zip', ['-q', '-r', '-X', zipFile, '.'], { cwd: path });
  return readFileSync(zipFile);
}

function nestedTemplateOf(assembly: CloudAssembly, resource: TemplateResource, logicalId: string): Template {
  const assetPath = resource.Metadata?.['aws:asset:path'];
  if (typeof assetPath !== 'string') {
    throw new Error(`nested stack ${logicalId} has no aws:asset:path metadata: cannot find its template`);
  }
  const asset = assembly.assets.get(assetPath);
  return JSON.parse(readFileSync(asset?.path ?? join(assembly.dir, assetPath), 'utf8')) as Template;
}

/** Creates a schedule group unless it exists (moto's CreateScheduleGroup replaces an existing group). */
async function ensureScheduleGroup(clients: LocalClients, name: string): Promise<void> {
  try {
    await clients.scheduler.send(new GetScheduleGroupCommand({ Name: name }));
  } catch {
    await clients.scheduler.send(new CreateScheduleGroupCommand({ Name: name }));
  }
}

async function waitForStack(api: AwsEndpoint, stackName: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const description = await describeStack(api, stackName);
    if (description.status === 'CREATE_COMPLETE') return description;
    if (!description.status.endsWith('_IN_PROGRESS') || Date.now() > deadline) {
      const failures = await stackFailures(api, stackName).catch(() => []);
      throw new Error(
        `stack ${stackName} is ${description.status}${description.statusReason ? ` (${description.statusReason})` : ''}` +
          `${failures.length > 0 ? `:\n  ${failures.join('\n  ')}` : ''}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Functions, Function URLs and rules of one deployed (flat) stack. */
async function readBack(
  options: DeployOptions,
  stack: AssemblyStack,
  template: Template,
  served: Map<string, string>,
  app: DeployedApp,
): Promise<void> {
  const { api } = options;
  const physical = new Map<string, string>();
  for (const resource of await listStackResources(api, stack.stackName)) {
    physical.set(resource.logicalId, resource.physicalId);
  }
  app.queuePolicies.push(
    ...queuePoliciesOf({
      stackName: stack.stackName,
      region: api.region,
      account: options.account,
      physical,
      template,
    }),
  );
  for (const [logicalId, resource] of Object.entries(template.Resources)) {
    if (resource.Type === 'AWS::Lambda::Function') {
      const name = physical.get(logicalId);
      if (!name) throw new Error(`${stack.stackName}: function ${logicalId} was not created`);
      const bundleDir = bundleDirOf(options.assembly, resource);
      if (!bundleDir)
        throw new Error(`${stack.stackName}: function ${logicalId} has no bundle in ${options.assembly.dir}`);
      app.functions.push({
        stackName: stack.stackName,
        logicalId,
        configuration: await getFunctionConfiguration(api, name),
        bundleDir,
      });
    }
    if (resource.Type === 'AWS::Events::Rule') {
      const name = physical.get(logicalId);
      if (name) app.rules.push(await describeRule(api, name));
    }
  }
  for (const [logicalId, resource] of Object.entries(template.Resources)) {
    if (resource.Type !== 'AWS::Lambda::Url') continue;
    const fnId = functionLogicalId(resource.Properties?.TargetFunctionArn);
    const fnName = fnId ? physical.get(fnId) : undefined;
    if (!fnName) throw new Error(`${stack.stackName}: cannot tell which function Function URL ${logicalId} invokes`);
    const resourcePolicy = await getFunctionPolicy(api, fnName);
    app.functionUrls.push({
      stackName: stack.stackName,
      logicalId,
      url: served.get(functionUrlKey(stack.stackName, logicalId)) ?? '',
      authType: String(resource.Properties?.AuthType ?? 'NONE'),
      functionName: fnName,
      ...(resourcePolicy ? { resourcePolicy } : {}),
    });
  }
}

/** `{ Fn::GetAtt: [Fn, 'Arn'] }` or `{ Ref: Fn }` → `Fn`. */
function functionLogicalId(expr: unknown): string | undefined {
  if (!expr || typeof expr !== 'object') return undefined;
  const node = expr as { Ref?: unknown; 'Fn::GetAtt'?: unknown };
  if (typeof node.Ref === 'string') return node.Ref;
  const att = node['Fn::GetAtt'];
  if (Array.isArray(att) && typeof att[0] === 'string') return att[0];
  if (typeof att === 'string') return att.split('.')[0];
  return undefined;
}
