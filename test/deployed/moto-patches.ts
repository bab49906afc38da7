/**
 * What the harness changes so that moto (5.2.1) deploys our template: every change is one entry
 * of {@link MOTO_PATCHES}, with the reason. Template patches work on a COPY of the synthesized
 * template (the production template in cdk.out is never written); the others act on moto
 * before or after CreateStack. Nothing here is needed on AWS.
 */
import type { LocalClients } from '../local-aws/clients';
import type { Template, TemplateResource } from './assembly';
import type { AwsEndpoint } from './aws-api';
import { listEventSourceMappings, setEventSourceMappingEnabled } from './aws-api';
import {
  collectReferences,
  dependsOnList,
  isPseudoParameter,
  type Reference,
  renameConditions,
  renameMappings,
  rewriteReferences,
} from './template-refs';

/** What a template patch may ask of the harness. */
export interface PatchContext {
  stackName: string;
  region: string;
  account: string;
  /** The synthesized template of a nested stack resource (from its `aws:asset:path`). */
  nestedTemplate(resource: TemplateResource, logicalId: string): Template;
  /** The URL the harness serves a Function URL resource at (started before the deploy). */
  functionUrl(logicalId: string): string;
  /** Schedule groups the harness must create in moto before CreateStack. */
  scheduleGroups: Set<string>;
}

/** One entry of the patch table. */
export interface MotoPatch {
  id: string;
  /** What moto lacks, and what the harness does instead. */
  reason: string;
  /** Changes the template copy in place; returns how many places it changed. */
  template?: (template: Template, ctx: PatchContext) => number;
  /** Runs against moto after the stack is created; returns how many things it changed. */
  afterDeploy?: (moto: { api: AwsEndpoint; clients: LocalClients }) => Promise<number>;
  /** What the Lambda host does differently from AWS on this target (it reads these). */
  host?: { timeoutFactor: number };
}

// ---------------------------------------------------------------------------------------------

const NESTED_STACK = 'AWS::CloudFormation::Stack';
const FUNCTION_URL = 'AWS::Lambda::Url';
const SCHEDULE_GROUP = 'AWS::Scheduler::ScheduleGroup';
const ALARM = 'AWS::CloudWatch::Alarm';

/**
 * The patches, in the order they apply. Nested stacks come first, so that the others see every
 * resource of the (then flat) template.
 */
export const MOTO_PATCHES: readonly MotoPatch[] = [
  {
    id: 'nested-stacks-inlined',
    reason:
      "moto creates an AWS::CloudFormation::Stack as a separate stack but has no `Outputs.<name>` attribute for it: a parent output or a sibling's parameter that reads one is silently dropped (measured). It also reads TemplateURL only in the https://s3.amazonaws.com/<bucket>/<key> form. The harness inlines each nested template into its parent (logical ids prefixed with the nested stack's id, its parameters replaced by the values the parent passes, `Outputs.<name>` by the nested output's expression).",
    template: inlineNestedStacks,
  },
  {
    id: 'function-url-attribute',
    reason:
      "moto answers HTTP 500 to Fn::GetAtt of an AWS::Lambda::Url (the stack stays CREATE_IN_PROGRESS) and creates no Function URL at all. The harness's Lambda host serves each Function URL itself (started before the deploy), so `FunctionUrl` is replaced by that URL and `FunctionArn` by the target function's ARN expression.",
    template: patchFunctionUrls,
  },
  {
    id: 'schedule-group-precreated',
    reason:
      "moto's CloudFormation has no AWS::Scheduler::ScheduleGroup: any Ref or Fn::GetAtt of one fails the template (undefined resource). The harness creates the group with the Scheduler API before CreateStack (moto's Scheduler has groups) and replaces Ref by its name and Arn by its ARN.",
    template: patchScheduleGroups,
  },
  {
    id: 'alarm-references',
    reason:
      "moto's CloudFormation has no AWS::CloudWatch::Alarm (skipped, listed with an empty type), so the dashboard's Fn::GetAtt of an alarm's Arn fails the template. Its Arn is replaced by the ARN the alarm would have (its AlarmName or logical id), Ref by that name. No alarm exists on moto.",
    template: patchAlarmReferences,
  },
  {
    id: 'ssm-parameter-named',
    reason:
      "moto's CloudFormation creates an AWS::SSM::Parameter only with a Name (it passes Name straight to PutParameter and fails with an AttributeError when it is missing), where CloudFormation generates one. The grants parameter has none, so the harness names it `<stackName>-<logical id>`, as a generated name would be (Ref then gives that name).",
    template: nameSsmParameters,
  },
  {
    id: 'moto-event-source-mappings-disabled',
    reason:
      "moto's SQS runs a queue's event source mapping itself on every SendMessage: it receives the messages and invokes the function in Docker, which is absent here, so the invoke fails and each message comes back with ApproximateReceiveCount one higher (measured). The harness reads the mappings, then disables them in moto; its own Lambda host polls instead (test/deployed/lambda-host.ts).",
    afterDeploy: async ({ api }) => {
      let changed = 0;
      for (const mapping of await listEventSourceMappings(api)) {
        if (mapping.State === 'Disabled') continue;
        await setEventSourceMappingEnabled(api, mapping.UUID, false);
        changed += 1;
      }
      return changed;
    },
  },
  {
    id: 'function-timeouts-scaled',
    reason:
      "moto's DynamoDB is several times slower than DynamoDB (enqueue p50 ~1.8 s against 0.26 s measured under load), and the harness sends every DynamoDB call through one serialising proxy (moto does not serialise conditional writes to one item). A 100-job batch replay took over 10 s there (the API's deployed timeout), where AWS takes well under a second. The Lambda host enforces each function's deployed Timeout times this factor (the context's remaining time counts down from the same); ORRERY_DEPLOYED_TIMEOUT_FACTOR=1 runs with the deployed timeouts as they are.",
    host: { timeoutFactor: 3 },
  },
];

/** Gives every AWS::SSM::Parameter without a Name the name CloudFormation would otherwise generate. */
function nameSsmParameters(template: Template, ctx: PatchContext): number {
  let changed = 0;
  for (const [id, resource] of Object.entries(template.Resources)) {
    if (resource.Type !== 'AWS::SSM::Parameter' || resource.Properties?.Name !== undefined) continue;
    resource.Properties = { ...resource.Properties, Name: `${ctx.stackName}-${id}` };
    changed += 1;
  }
  return changed;
}

/** The factor the Lambda host applies to the deployed timeouts (`ORRERY_DEPLOYED_TIMEOUT_FACTOR` overrides). */
export function hostTimeoutFactor(env: NodeJS.ProcessEnv = process.env): number {
  const given = env.ORRERY_DEPLOYED_TIMEOUT_FACTOR;
  if (given !== undefined && given !== '') {
    const factor = Number(given);
    if (!(factor >= 1)) throw new Error(`ORRERY_DEPLOYED_TIMEOUT_FACTOR must be a number ≥ 1 (got ${given})`);
    return factor;
  }
  return MOTO_PATCHES.find((patch) => patch.host)?.host?.timeoutFactor ?? 1;
}

/** Applies every template patch to a deep copy of `template`; returns the copy and the counts. */
export function patchTemplate(
  template: Template,
  ctx: PatchContext,
): { template: Template; applied: { id: string; places: number }[] } {
  const copy = structuredClone(template);
  const applied: { id: string; places: number }[] = [];
  for (const patch of MOTO_PATCHES) {
    if (!patch.template) continue;
    const places = patch.template(copy, ctx);
    applied.push({ id: patch.id, places });
  }
  assertNoUnpatchedReferences(copy);
  return { template: copy, applied };
}

/**
 * Fails with a clear message when the patched template still references something moto cannot
 * resolve (a new resource type of the same kind needs a patch, not a mysterious stuck stack).
 */
export function assertNoUnpatchedReferences(template: Template): void {
  const types = new Map(Object.entries(template.Resources).map(([id, r]) => [id, r.Type]));
  const problems: string[] = [];
  for (const [id, resource] of Object.entries({ ...template.Resources, ...outputsAsResources(template) })) {
    for (const reference of collectReferences(resource)) {
      const type = types.get(reference.id);
      if (type === SCHEDULE_GROUP || type === NESTED_STACK) problems.push(`${id} → ${describe(reference)} (${type})`);
      if (type === FUNCTION_URL && reference.kind === 'GetAtt')
        problems.push(`${id} → ${describe(reference)} (${type})`);
      if (type === ALARM && reference.kind === 'GetAtt') problems.push(`${id} → ${describe(reference)} (${type})`);
    }
  }
  if (problems.length > 0) {
    throw new Error(`references moto cannot resolve remain after the patches:\n  ${problems.join('\n  ')}`);
  }
}

function outputsAsResources(template: Template): Record<string, TemplateResource> {
  return Object.fromEntries(
    Object.entries(template.Outputs ?? {}).map(([id, output]) => [
      `Outputs.${id}`,
      output as unknown as TemplateResource,
    ]),
  );
}

function describe(reference: Reference): string {
  return reference.kind === 'Ref' ? `Ref ${reference.id}` : `GetAtt ${reference.id}.${reference.attribute}`;
}

/** Rewrites references everywhere a template has expressions: resources and outputs (and conditions). */
function rewriteEverywhere(template: Template, rewrite: (reference: Reference) => unknown | undefined): number {
  let places = 0;
  const counting = (reference: Reference) => {
    const replaced = rewrite(reference);
    if (replaced !== undefined) places += 1;
    return replaced;
  };
  for (const [id, resource] of Object.entries(template.Resources)) {
    template.Resources[id] = rewriteReferences(resource, counting) as TemplateResource;
  }
  if (template.Outputs) template.Outputs = rewriteReferences(template.Outputs, counting) as Template['Outputs'];
  if (template.Conditions)
    template.Conditions = rewriteReferences(template.Conditions, counting) as Record<string, unknown>;
  return places;
}

function removeResource(template: Template, id: string, replacementDeps: string[] = []): void {
  delete template.Resources[id];
  for (const resource of Object.values(template.Resources)) {
    if (resource.DependsOn === undefined) continue;
    const deps = dependsOnList(resource.DependsOn).flatMap((dep) => (dep === id ? replacementDeps : [dep]));
    if (deps.length === 0) delete resource.DependsOn;
    else resource.DependsOn = [...new Set(deps)];
  }
}

/**
 * A value the harness needs before the stack exists (a schedule group's name): a literal, or an
 * expression of literals and pseudo parameters only.
 */
function resolveStatic(expr: unknown, ctx: PatchContext): string {
  if (typeof expr === 'string') return expr;
  const pseudo: Record<string, string> = {
    'AWS::StackName': ctx.stackName,
    'AWS::Region': ctx.region,
    'AWS::AccountId': ctx.account,
    'AWS::Partition': 'aws',
    'AWS::URLSuffix': 'amazonaws.com',
  };
  if (expr && typeof expr === 'object' && !Array.isArray(expr)) {
    const node = expr as Record<string, unknown>;
    if (typeof node.Ref === 'string' && pseudo[node.Ref] !== undefined) return pseudo[node.Ref] as string;
    const join = node['Fn::Join'];
    if (Array.isArray(join) && typeof join[0] === 'string' && Array.isArray(join[1])) {
      return (join[1] as unknown[]).map((part) => resolveStatic(part, ctx)).join(join[0]);
    }
    const sub = node['Fn::Sub'];
    if (typeof sub === 'string') {
      return sub.replace(/\$\{([^}!]+)\}/g, (_, name: string) => {
        const value = pseudo[name];
        if (value === undefined) throw new Error(`cannot resolve \${${name}} before the deploy`);
        return value;
      });
    }
  }
  throw new Error(`cannot resolve ${JSON.stringify(expr)} before the deploy (only literals and pseudo parameters)`);
}

// ---------------------------------------------------------------------------------------------
// nested-stacks-inlined

function inlineNestedStacks(template: Template, ctx: PatchContext): number {
  let inlined = 0;
  for (const [id, resource] of Object.entries(template.Resources)) {
    if (resource.Type !== NESTED_STACK) continue;
    if (resource.Condition) throw new Error(`nested stack ${id} has a Condition: not supported by the harness`);
    const nested = structuredClone(ctx.nestedTemplate(resource, id));
    inlined += 1 + inlineNestedStacks(nested, ctx); // nested stacks of the nested stack first
    inlineOne(template, id, resource, nested);
  }
  return inlined;
}

function inlineOne(parent: Template, stackId: string, stackResource: TemplateResource, nested: Template): void {
  const prefix = stackId;
  const resourceIds = new Set(Object.keys(nested.Resources));
  const parameters = (stackResource.Properties?.Parameters ?? {}) as Record<string, unknown>;
  const rename = (id: string) => `${prefix}${id}`;
  const parameterValue = (name: string): unknown => {
    if (name in parameters) return parameters[name];
    const declared = nested.Parameters?.[name];
    if (declared && declared.Default !== undefined) {
      // An SSM-typed parameter keeps its meaning only as a parameter: hoist it into the parent.
      if (declared.Type.startsWith('AWS::SSM::Parameter::Value')) {
        const hoisted = rename(name);
        parent.Parameters = { ...parent.Parameters, [hoisted]: declared };
        return { Ref: hoisted };
      }
      return declared.Default;
    }
    throw new Error(`nested stack ${stackId}: parameter ${name} has no value and no default`);
  };
  // Condition and map names first (only the nested template's own are there yet), then the
  // references, whose replacements may be the parent's expressions.
  const intoParentScope = (value: unknown): unknown =>
    rewriteReferences(renameMappings(renameConditions(value, rename), rename), (reference) => {
      if (isPseudoParameter(reference.id)) return undefined;
      if (reference.kind === 'Ref' && !resourceIds.has(reference.id)) return parameterValue(reference.id);
      if (!resourceIds.has(reference.id)) throw new Error(`nested stack ${stackId}: GetAtt of unknown ${reference.id}`);
      return reference.kind === 'Ref'
        ? { Ref: rename(reference.id) }
        : { 'Fn::GetAtt': [rename(reference.id), reference.attribute] };
    });

  for (const [id, resource] of Object.entries(nested.Resources)) {
    const moved = intoParentScope(resource) as TemplateResource;
    const deps = dependsOnList(resource.DependsOn).map(rename);
    if (deps.length > 0) moved.DependsOn = deps;
    if (resource.Condition) moved.Condition = rename(resource.Condition);
    // What the nested stack itself depended on, each of its resources now depends on.
    const stackDeps = dependsOnList(stackResource.DependsOn);
    if (stackDeps.length > 0) moved.DependsOn = [...new Set([...dependsOnList(moved.DependsOn), ...stackDeps])];
    parent.Resources[rename(id)] = moved;
  }
  for (const [name, condition] of Object.entries(nested.Conditions ?? {})) {
    parent.Conditions = { ...parent.Conditions, [rename(name)]: intoParentScope(condition) };
  }
  for (const [name, mapping] of Object.entries(nested.Mappings ?? {})) {
    parent.Mappings = { ...parent.Mappings, [rename(name)]: mapping };
  }
  const outputs = Object.fromEntries(
    Object.entries(nested.Outputs ?? {}).map(([name, output]) => [name, intoParentScope(output.Value)]),
  );
  removeResource(parent, stackId, [...resourceIds].map(rename));
  rewriteEverywhere(parent, (reference) => {
    if (reference.id !== stackId) return undefined;
    if (reference.kind === 'GetAtt' && reference.attribute.startsWith('Outputs.')) {
      const name = reference.attribute.slice('Outputs.'.length);
      if (!(name in outputs)) throw new Error(`nested stack ${stackId} has no output ${name}`);
      return outputs[name];
    }
    throw new Error(`${describe(reference)} of nested stack ${stackId} is not supported by the harness`);
  });
}

// ---------------------------------------------------------------------------------------------
// function-url-attribute

function patchFunctionUrls(template: Template, ctx: PatchContext): number {
  const urls = Object.entries(template.Resources).filter(([, r]) => r.Type === FUNCTION_URL);
  if (urls.length === 0) return 0;
  const byId = new Map(urls);
  return rewriteEverywhere(template, (reference) => {
    const url = byId.get(reference.id);
    if (!url || reference.kind !== 'GetAtt') return undefined;
    if (reference.attribute === 'FunctionUrl') return ctx.functionUrl(reference.id);
    if (reference.attribute === 'FunctionArn') return url.Properties?.TargetFunctionArn;
    throw new Error(`GetAtt ${reference.id}.${reference.attribute} of a Function URL is not supported by the harness`);
  });
}

// ---------------------------------------------------------------------------------------------
// schedule-group-precreated

function patchScheduleGroups(template: Template, ctx: PatchContext): number {
  let places = 0;
  for (const [id, resource] of Object.entries(template.Resources)) {
    if (resource.Type !== SCHEDULE_GROUP) continue;
    const name =
      resource.Properties?.Name === undefined ? `${ctx.stackName}-${id}` : resolveStatic(resource.Properties.Name, ctx);
    ctx.scheduleGroups.add(name);
    removeResource(template, id);
    places +=
      1 +
      rewriteEverywhere(template, (reference) => {
        if (reference.id !== id) return undefined;
        if (reference.kind === 'Ref') return name;
        if (reference.attribute === 'Arn') {
          return {
            'Fn::Sub': `arn:\${AWS::Partition}:scheduler:\${AWS::Region}:\${AWS::AccountId}:schedule-group/${name}`,
          };
        }
        throw new Error(`GetAtt ${id}.${reference.attribute} of a schedule group is not supported by the harness`);
      });
  }
  return places;
}

// ---------------------------------------------------------------------------------------------
// alarm-references

function patchAlarmReferences(template: Template, ctx: PatchContext): number {
  const alarms = new Map(Object.entries(template.Resources).filter(([, r]) => r.Type === ALARM));
  if (alarms.size === 0) return 0;
  const nameOf = (id: string): unknown => {
    const given = alarms.get(id)?.Properties?.AlarmName;
    return given === undefined ? `${ctx.stackName}-${id}` : given;
  };
  return rewriteEverywhere(template, (reference) => {
    if (!alarms.has(reference.id)) return undefined;
    const name = nameOf(reference.id);
    if (reference.kind === 'Ref') return name;
    if (reference.attribute !== 'Arn') return undefined;
    return {
      'Fn::Join': [
        '',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a CloudFormation Fn::Sub string
        [{ 'Fn::Sub': 'arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:' }, name],
      ],
    };
  });
}
