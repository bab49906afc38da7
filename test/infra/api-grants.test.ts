import { App, Stack } from 'aws-cdk-lib';
import { AccountRootPrincipal, ArnPrincipal, type IGrantable, Role, ServicePrincipal, User } from 'aws-cdk-lib/aws-iam';
import { describe, expect, it } from 'vitest';
import { echoJob, flakyJob, sleepJob } from '../../functions/jobs/catalog';
import { adminsFromContext, callersFromContext } from '../../infra/app-context';
import {
  ADVANCED_PARAMETER_BYTES,
  RESOLVED_PART_BYTES,
  STANDARD_PARAMETER_BYTES,
} from '../../infra/constructs/api-grants';
import { JobPlatform } from '../../infra/constructs/job-platform';
import { OrreryStack } from '../../infra/stack';
import { ENV } from '../../shared/config';
import type { GrantsDocument } from '../../shared/core/access';
import { measure, overQuota, Resolver, readAssembly, type StackUnderTest } from './quotas';
import {
  ASSET_METADATA,
  allowedActions,
  asArray,
  flatTemplate,
  functionEnv,
  logicalId,
  resources,
  roleStatements,
  SKIP_BUNDLING,
  tempOutdir,
  testApp,
} from './support';

/** The account and partition quotas.ts resolves pseudo parameters to. */
const ACCOUNT = '123456789012';

function platformStack(app: App = testApp()): { stack: Stack; platform: JobPlatform } {
  const stack = new Stack(app, 'Grants');
  const platform = new JobPlatform(stack, 'Platform', { outputs: false });
  platform.addJobType({ spec: echoJob, entry: 'functions/jobs/echo.ts' });
  platform.addJobType({ spec: flakyJob, entry: 'functions/jobs/flaky.ts' });
  return { stack, platform };
}

function caller(stack: Stack, id: string): Role {
  return new Role(stack, id, { assumedBy: new AccountRootPrincipal() });
}

/**
 * The parent stack as CloudFormation would resolve it, a resolver of its values (nested stacks'
 * outputs included), and the resolved name of any role or user of the app.
 */
function deployed(app: App): { parent: StackUnderTest; resolver: Resolver; nameOf: (c: Role | User) => string } {
  const stacks = readAssembly(app);
  const [parent] = stacks;
  if (!parent) throw new Error('no stack');
  const resolvers = new Map(
    stacks.map((under) => {
      const resolver = new Resolver(under);
      for (const child of stacks) {
        const rest = child.name.slice(under.name.length + 1);
        if (child.name.startsWith(`${under.name}/`) && !rest.includes('/')) resolver.nested.set(rest, child);
      }
      return [under.name, resolver] as const;
    }),
  );
  const nameOf = (construct: Role | User) => {
    const id = logicalId(construct).split('/');
    const local = id.pop() as string;
    const resolver = resolvers.get([parent.name, ...id].join('/'));
    if (!resolver) throw new Error(`no stack for ${construct.node.path}`);
    return resolver.resolve({ Ref: local });
  };
  return { parent, resolver: resolvers.get(parent.name) as Resolver, nameOf };
}

function grantsParameter(parent: StackUnderTest): { id: string; properties: Record<string, unknown> } {
  const found = Object.entries(parent.template.Resources ?? {}).filter(([, r]) => r.Type === 'AWS::SSM::Parameter');
  expect(found).toHaveLength(1);
  const [[id, resource]] = found as unknown as [[string, { Properties?: Record<string, unknown> }]];
  return { id, properties: resource.Properties ?? {} };
}

function appWithOutdir(prefix: string): App {
  return new App({ outdir: tempOutdir(prefix), context: { ...SKIP_BUNDLING, ...ASSET_METADATA } });
}

describe('JobPlatform grants: one SSM parameter written by CloudFormation', () => {
  it('resolves, once deployed, to the grants document keyed by each principal id', () => {
    const app = appWithOutdir('grants-doc');
    const { stack, platform } = platformStack(app);
    const billing = caller(stack, 'Billing');
    const imported = Role.fromRoleArn(stack, 'Support', 'arn:aws:iam::210987654321:role/teams/support');
    const operator = new User(stack, 'Operator');
    platform.grantEnqueue(billing, { types: ['echo'] });
    platform.grantSignal(billing, { types: ['flaky'] });
    platform.grantEnqueue(billing, { types: ['echo'] }); // the same grant twice is recorded once
    platform.grantControl(imported, { types: ['flaky'], actions: ['retry', 'cancel'] });
    platform.grantRead(imported);
    platform.grantOperate(operator);
    platform.grantAdmin(new AccountRootPrincipal());
    const worker = platform.jobTypes.get('echo')?.worker;
    if (!worker) throw new Error('no echo worker');
    platform.grantEnqueue(worker); // a construct whose grantPrincipal is its role
    // a type added after the grants that name it still counts
    platform.addJobType({ spec: sleepJob, entry: 'functions/jobs/sleep.ts' });
    platform.grantRead(billing, { types: ['sleep'] });

    const { parent, resolver, nameOf } = deployed(app);
    const parameter = grantsParameter(parent);
    const document = JSON.parse(resolver.resolve(parameter.properties.Value)) as GrantsDocument;
    expect(document).toEqual({
      v: 1,
      principals: {
        [`arn:aws:iam::${ACCOUNT}:role/${nameOf(billing)}`]: [
          { action: 'enqueue', types: ['echo'] },
          { action: 'signal', types: ['flaky'] },
          { action: 'read', types: ['sleep'] },
        ],
        // imported: its own account, its name without the path
        'arn:aws:iam::210987654321:role/support': [
          { action: 'control', types: ['flaky'], actions: ['retry', 'cancel'] },
          { action: 'read' },
        ],
        [`arn:aws:iam::${ACCOUNT}:user/${nameOf(operator)}`]: [{ action: 'operate' }],
        [`arn:aws:iam::${ACCOUNT}:root`]: [{ action: 'admin' }],
        [`arn:aws:iam::${ACCOUNT}:role/${nameOf(worker.handler.executionRole)}`]: [{ action: 'enqueue' }],
      },
    });
    expect(parameter.properties.Type).toBe('String');
    expect(parameter.properties.Tier).toBe('Standard');
    // the synthesis-time bound is an upper bound of the resolved value
    expect(Buffer.byteLength(resolver.resolve(parameter.properties.Value))).toBeLessThanOrEqual(
      platform.grants.boundBytes,
    );
  });

  it('with no grant, the parameter still exists and grants nothing', () => {
    const app = appWithOutdir('grants-empty');
    platformStack(app);
    const { parent, resolver } = deployed(app);
    expect(JSON.parse(resolver.resolve(grantsParameter(parent).properties.Value))).toEqual({ v: 1, principals: {} });
  });

  it('plain grantEnqueue(role) grants enqueue of every type and nothing else; admin subsumes the rest', () => {
    const { stack, platform } = platformStack();
    const service = caller(stack, 'Service');
    const team = caller(stack, 'Team');
    platform.grantEnqueue(service);
    platform.grantRead(team, { types: ['echo'] });
    platform.grantAdmin(team);
    const principals = Object.values(platform.grants.document(false).principals);
    expect(principals).toEqual([[{ action: 'enqueue' }], [{ action: 'admin' }]]);
  });

  it('gives only the API the parameter: one variable naming it, and ssm:GetParameter on exactly it', () => {
    const app = appWithOutdir('grants-iam');
    const { stack, platform } = platformStack(app);
    const billing = caller(stack, 'Billing');
    platform.grantEnqueue(billing, { types: ['echo'] });
    const template = flatTemplate(stack);
    const parameterId = logicalId(platform.grants.parameter);

    expect(functionEnv(template, logicalId(platform.api.handler))[ENV.grantsParameter]).toEqual({ Ref: parameterId });
    for (const id of [
      logicalId(platform.supervisor.handler),
      logicalId(platform.jobTypes.get('echo')?.worker.handler as never),
    ]) {
      expect(functionEnv(template, id)[ENV.grantsParameter], id).toBeUndefined();
    }

    const apiRoleId = logicalId(platform.api.handler.executionRole);
    const ssm = allowedActions(roleStatements(template, apiRoleId)).filter((a) => a.action.startsWith('ssm:'));
    expect(ssm.map((a) => a.action)).toEqual(['ssm:GetParameter']);
    const { resolver } = deployed(app);
    const resource = JSON.parse(ssm[0]?.resources ?? 'null') as unknown;
    expect(resolver.resolve(resource)).toBe(
      `arn:aws:ssm:ap-southeast-3:${ACCOUNT}:parameter/${resolver.resolve({ Ref: parameterId })}`,
    );
    // no other role reads it
    const readers = Object.entries(resources(template, 'AWS::IAM::Policy')).filter(([, policy]) =>
      JSON.stringify(policy.Properties?.PolicyDocument).includes('ssm:'),
    );
    expect(readers).toHaveLength(1);

    // the grantee: invoke on the API's URL, as before
    const invoke = roleStatements(template, logicalId(billing)).find((st) =>
      asArray(st.Action).includes('lambda:InvokeFunctionUrl'),
    );
    expect(invoke?.Resource).toEqual({ 'Fn::GetAtt': [logicalId(platform.api.handler), 'Arn'] });
    expect(invoke?.Condition).toEqual({ StringEquals: { 'lambda:FunctionUrlAuthType': 'AWS_IAM' } });
  });

  it('picks the tier from the bound: Standard up to 4,096 bytes, Advanced above, refused above 8 KB', () => {
    const withCallers = (count: number) => {
      const { stack, platform } = platformStack();
      for (let i = 0; i < count; i++) platform.grantEnqueue(caller(stack, `Caller${i}`), { types: ['echo'] });
      return { stack, platform };
    };
    // each caller: its key with a 64-character name, 12-digit account, 10-character partition
    const perCaller = withCallers(2).platform.grants.boundBytes - withCallers(1).platform.grants.boundBytes;
    expect(perCaller).toBeGreaterThan(RESOLVED_PART_BYTES.name + RESOLVED_PART_BYTES.account);

    const standard = withCallers(Math.floor(STANDARD_PARAMETER_BYTES / perCaller) - 1);
    expect(standard.platform.grants.boundBytes).toBeLessThanOrEqual(STANDARD_PARAMETER_BYTES);
    expect(flatTemplate(standard.stack).toJSON()).toMatchObject({
      Resources: { [logicalId(standard.platform.grants.parameter)]: { Properties: { Tier: 'Standard' } } },
    });

    const advanced = withCallers(Math.ceil(STANDARD_PARAMETER_BYTES / perCaller) + 1);
    expect(advanced.platform.grants.boundBytes).toBeGreaterThan(STANDARD_PARAMETER_BYTES);
    expect(advanced.platform.grants.boundBytes).toBeLessThanOrEqual(ADVANCED_PARAMETER_BYTES);
    expect(flatTemplate(advanced.stack).toJSON()).toMatchObject({
      Resources: { [logicalId(advanced.platform.grants.parameter)]: { Properties: { Tier: 'Advanced' } } },
    });

    const over = withCallers(Math.ceil(ADVANCED_PARAMETER_BYTES / perCaller) + 1);
    expect(() => flatTemplate(over.stack)).toThrow(/one SSM parameter holds 8192/);
  });

  it("the resolved value stays within its tier's quota (quotas.ts measures every SSM parameter)", () => {
    const app = appWithOutdir('grants-quota');
    const { stack, platform } = platformStack(app);
    for (let i = 0; i < 40; i++) platform.grantRead(caller(stack, `Reader${i}`), { types: ['echo', 'flaky'] });
    const figures = measure(readAssembly(app)).filter((f) => f.what.startsWith('value of SSM parameter'));
    expect(figures).toHaveLength(1);
    expect(figures[0]?.limit).toBe(ADVANCED_PARAMETER_BYTES);
    expect(figures[0]?.value).toBeGreaterThan(STANDARD_PARAMETER_BYTES);
    expect(overQuota(figures)).toEqual([]);
  });
});

describe('JobPlatform grants: refused at synthesis, with the reason', () => {
  it('a job type that was never added', () => {
    const { stack, platform } = platformStack();
    platform.grantEnqueue(caller(stack, 'Billing'), { types: ['echo', 'send-invoice'] });
    expect(() => flatTemplate(stack)).toThrow(/enqueue grant of Grants\/Billing names job types .*: send-invoice/);
  });

  it('empty types or actions, and an unknown control action', () => {
    const { stack, platform } = platformStack();
    const role = caller(stack, 'Billing');
    expect(() => platform.grantEnqueue(role, { types: [] })).toThrow(/types: \[\] grants nothing/);
    expect(() => platform.grantControl(role, { actions: [] })).toThrow(/actions: \[\] grants nothing/);
    expect(() => platform.grantControl(role, { actions: ['cancel', 'delete' as never] })).toThrow(
      /unknown control actions delete \(known: cancel, retry, rerun, bulk\)/,
    );
  });

  it('a grantee that is not an IAM role, user or account, and grants nothing on IAM either', () => {
    const { stack, platform } = platformStack();
    const refused: IGrantable[] = [
      { grantPrincipal: new ServicePrincipal('events.amazonaws.com') },
      { grantPrincipal: new ArnPrincipal('arn:aws:sts::123456789012:assumed-role/billing/session') },
    ];
    for (const grantee of refused) {
      expect(() => platform.grantAdmin(grantee)).toThrow(/must be an IAM role .*, an IAM user, an account/);
    }
    expect(platform.grants.document(false).principals).toEqual({});
    const apiArn = JSON.stringify({ 'Fn::GetAtt': [logicalId(platform.api.handler), 'Arn'] });
    const onApi = Object.values(resources(flatTemplate(stack), 'AWS::Lambda::Permission')).filter(
      (permission) => JSON.stringify(permission.Properties?.FunctionName) === apiArn,
    );
    expect(onApi).toEqual([]);
  });

  it('accepts a role given by a literal ARN principal, keyed without its path', () => {
    const { platform } = platformStack();
    platform.grantRead({ grantPrincipal: new ArnPrincipal('arn:aws:iam::210987654321:role/path/to/reporting') });
    expect(platform.grants.document(false).principals).toEqual({
      'arn:aws:iam::210987654321:role/reporting': [{ action: 'read' }],
    });
  });
});

describe('JobPlatform grants: a deploy that changes them starts new API containers', () => {
  it("the API function's description carries the grants' digest: changed by a grant, not by a job type", () => {
    const description = (setup: (stack: Stack, platform: JobPlatform) => void) => {
      const { stack, platform } = platformStack();
      setup(stack, platform);
      const fn = resources(flatTemplate(stack), 'AWS::Lambda::Function')[logicalId(platform.api.handler)];
      return fn?.Properties?.Description as string;
    };
    const none = description(() => undefined);
    const enqueue = description((stack, platform) => platform.grantEnqueue(caller(stack, 'Billing')));
    const scoped = description((stack, platform) =>
      platform.grantEnqueue(caller(stack, 'Billing'), { types: ['echo'] }),
    );
    const other = description((stack, platform) => platform.grantEnqueue(caller(stack, 'Shipping')));
    const moreTypes = description((stack, platform) => {
      platform.grantEnqueue(caller(stack, 'Billing'));
      platform.addJobType({ spec: sleepJob, entry: 'functions/jobs/sleep.ts' });
    });
    expect(none).toMatch(/^Orrery enqueue API \(Function URL, AWS_IAM auth\); grants [0-9a-f]{16}$/);
    expect(new Set([none, enqueue, scoped, other]).size).toBe(4);
    expect(moreTypes).toBe(enqueue);
  });
});

describe("the repository's app: admins from -c orrery:admins", () => {
  it('grants each admin everything, with the invoke permission on the API function, not on their identity', () => {
    const stack = new OrreryStack(testApp(), 'Orrery', {
      admins: ['arn:aws:iam::000000000000:user/local', 'arn:aws:iam::210987654321:role/ops/platform-team'],
    });
    expect(stack.platform.grants.document(false).principals).toEqual({
      'arn:aws:iam::000000000000:user/local': [{ action: 'admin' }],
      'arn:aws:iam::210987654321:role/platform-team': [{ action: 'admin' }],
    });
    const apiArn = JSON.stringify({ 'Fn::GetAtt': [logicalId(stack.platform.api.handler), 'Arn'] });
    const onApi = Object.values(resources(flatTemplate(stack), 'AWS::Lambda::Permission'))
      .filter((permission) => JSON.stringify(permission.Properties?.FunctionName) === apiArn)
      .filter((permission) => permission.Properties?.Action === 'lambda:InvokeFunctionUrl')
      .map((permission) => [permission.Properties?.Principal, permission.Properties?.FunctionUrlAuthType]);
    expect(onApi).toEqual([
      ['arn:aws:iam::000000000000:user/local', 'AWS_IAM'],
      ['arn:aws:iam::210987654321:role/ops/platform-team', 'AWS_IAM'],
    ]);
  });
});

describe("the repository's app: scoped grants from -c orrery:callers", () => {
  const billing = 'arn:aws:iam::210987654321:role/billing';
  const support = 'arn:aws:iam::210987654321:role/support/desk';

  it("applies each caller's grants with the matching grant method, one invoke permission per caller", () => {
    const callers = callersFromContext(
      JSON.stringify({
        [billing]: [
          { action: 'enqueue', types: ['echo'] },
          { action: 'read', types: ['echo'] },
        ],
        [support]: [{ action: 'control', types: ['flaky'], actions: ['retry'] }, { action: 'operate' }],
      }),
    );
    const stack = new OrreryStack(testApp(), 'Orrery', { callers });
    expect(stack.platform.grants.document(false).principals).toEqual({
      [billing]: [
        { action: 'enqueue', types: ['echo'] },
        { action: 'read', types: ['echo'] },
      ],
      'arn:aws:iam::210987654321:role/desk': [
        { action: 'control', types: ['flaky'], actions: ['retry'] },
        { action: 'operate' },
      ],
    });
    const apiArn = JSON.stringify({ 'Fn::GetAtt': [logicalId(stack.platform.api.handler), 'Arn'] });
    const principals = Object.values(resources(flatTemplate(stack), 'AWS::Lambda::Permission'))
      .filter((permission) => JSON.stringify(permission.Properties?.FunctionName) === apiArn)
      .filter((permission) => permission.Properties?.Action === 'lambda:InvokeFunctionUrl')
      .map((permission) => permission.Properties?.Principal);
    expect(principals.sort()).toEqual([billing, support]);
  });

  it('takes an object from cdk.json as it is, and nothing when unset', () => {
    expect(callersFromContext({ [billing]: [{ action: 'signal' }] })).toEqual({ [billing]: [{ action: 'signal' }] });
    expect(callersFromContext(undefined)).toEqual({});
  });

  it.each([
    ['not JSON', '{"arn', /not JSON/],
    ['a list', '[]', /principals is not an object/],
    ['an unknown action', JSON.stringify({ [billing]: [{ action: 'delete' }] }), /has no known action/],
    ['types that are not a list', JSON.stringify({ [billing]: [{ action: 'read', types: 'echo' }] }), /types/],
  ])('fails the synthesis on %s, naming the key', (_what, value, reason) => {
    expect(() => callersFromContext(value)).toThrow(/context orrery:callers must map/);
    expect(() => callersFromContext(value)).toThrow(reason);
  });

  it('fails the synthesis on a grant of a type the app does not deploy', () => {
    const stack = new OrreryStack(testApp(), 'Orrery', {
      callers: { [billing]: [{ action: 'enqueue', types: ['nope'] }] },
    });
    expect(() => flatTemplate(stack)).toThrow(/nope/);
  });

  it('reads admins from the command line (commas) or cdk.json (a list)', () => {
    expect(adminsFromContext(` ${billing}, ${support} ,`)).toEqual([billing, support]);
    expect(adminsFromContext([billing])).toEqual([billing]);
    expect(adminsFromContext(undefined)).toEqual([]);
    expect(() => adminsFromContext(7)).toThrow(/orrery:admins must be ARNs/);
  });
});
