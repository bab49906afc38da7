/**
 * The outer layer of who may call the API, on the deployed stack: IAM, before any of the API's own
 * grants (docs/security.md). Each question is put to the policy simulator
 * (`@cloud-copilot/iam-simulate`) with the policies as deployed: the API function's resource
 * policy (Lambda GetPolicy, recorded by the harness in deployment.json) and each caller's identity
 * policies (the stack's roles as deployed, or a broad one of our own).
 *
 * The harness deploys the app with the e2e caller as its one admin (`-c orrery:admins`,
 * global-setup.ts), an IAM user in another account than the stack's; so a caller there needs the
 * function's resource policy to name it, whatever its own policies allow.
 *
 * Runs in the `deployed` project only (`npm run test:deployed`).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { runSimulation } from '@cloud-copilot/iam-simulate';
import { describe, expect, it } from 'vitest';
import { LOCAL_USER_ARN } from '../local-aws/function-url';
import { CALLER_GRANTS } from '../support/grants-callers';

interface Deployment {
  functions: { configuration: { FunctionName: string; FunctionArn: string; Role: string } }[];
  functionUrls: { functionName: string; authType: string; resourcePolicy?: { Statement: unknown[] } }[];
  roles: { roleArn: string; inline: Record<string, unknown> }[];
  mappings: { FunctionArn: string }[];
}

function deployment(): Deployment {
  const outputs = process.env.ORRERY_E2E_OUTPUTS;
  if (!outputs) throw new Error('ORRERY_E2E_OUTPUTS is not set (npm run test:deployed sets it)');
  return JSON.parse(readFileSync(join(dirname(outputs), 'deployment.json'), 'utf8')) as Deployment;
}

const app = deployment();
const url = app.functionUrls[0];
const api = app.functions.find((fn) => fn.configuration.FunctionName === url?.functionName)?.configuration;
const stackAccount = /^arn:aws:lambda:[^:]+:(\d{12}):/.exec(api?.FunctionArn ?? '')?.[1] ?? '';

/** What a broadly privileged identity carries: every Lambda action on every resource. */
const LAMBDA_ADMIN = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'lambda:*', Resource: '*' }] };

/**
 * Whether `principal` may call the Function URL: since October 2025 a call needs both
 * `lambda:InvokeFunctionUrl` and `lambda:InvokeFunction` (with `lambda:InvokedViaFunctionUrl`).
 * Answers 'Allowed' when both are, else the first other result.
 */
async function invoke(principal: string, identityPolicies: { name: string; policy: unknown }[]): Promise<string> {
  if (!api || !url) throw new Error('the deployment has no API Function URL');
  const asks: { action: string; context: Record<string, string> }[] = [
    { action: 'lambda:InvokeFunctionUrl', context: { 'lambda:FunctionUrlAuthType': url.authType } },
    { action: 'lambda:InvokeFunction', context: { 'lambda:InvokedViaFunctionUrl': 'true' } },
  ];
  for (const ask of asks) {
    const result = await runSimulation(
      {
        request: {
          principal,
          action: ask.action,
          resource: { resource: api.FunctionArn, accountId: stackAccount },
          contextVariables: { ...ask.context, 'aws:SecureTransport': 'true' },
        },
        identityPolicies: identityPolicies as never,
        serviceControlPolicies: [],
        resourceControlPolicies: [],
        ...(url.resourcePolicy ? { resourcePolicy: url.resourcePolicy as never } : {}),
      },
      {},
    );
    if (result.resultType === 'error') throw new Error(`the simulator refused: ${JSON.stringify(result.errors)}`);
    if (result.overallResult !== 'Allowed') return `${ask.action}: ${result.overallResult}`;
  }
  return 'Allowed';
}

describe('invoking the API (the outer IAM layer)', () => {
  it('is a Function URL with AWS_IAM auth whose resource policy names the granted admin', () => {
    expect(url?.authType).toBe('AWS_IAM');
    expect(JSON.stringify(url?.resourcePolicy ?? {})).toContain(LOCAL_USER_ARN);
  });

  it('allows the admin the stack was deployed with', async () => {
    expect(LOCAL_USER_ARN.split(':')[4]).not.toBe(stackAccount); // another account: the resource policy decides
    expect(await invoke(LOCAL_USER_ARN, [{ name: 'lambda-admin', policy: LAMBDA_ADMIN }])).toBe('Allowed');
  });

  it('allows each caller granted through -c orrery:callers, scoped grants included (the matrix is the inner layer)', async () => {
    const granted = Object.keys(CALLER_GRANTS);
    expect(granted.length).toBeGreaterThan(0);
    for (const role of granted) {
      expect(JSON.stringify(url?.resourcePolicy ?? {}), role).toContain(role);
      expect(await invoke(role, [{ name: 'lambda-admin', policy: LAMBDA_ADMIN }]), role).toBe('Allowed');
    }
  });

  it('denies a caller of the same other account that was not granted, however broad its own policies', async () => {
    const other = LOCAL_USER_ARN.replace(/user\/local$/, 'user/someone-else');
    expect(await invoke(other, [{ name: 'lambda-admin', policy: LAMBDA_ADMIN }])).not.toBe('Allowed');
  });

  it("denies every function of the stack, each with its role's policies as deployed", async () => {
    expect(app.functions.length).toBeGreaterThan(3);
    for (const { configuration } of app.functions) {
      const role = app.roles.find((r) => r.roleArn === configuration.Role);
      if (!role) throw new Error(`no role as deployed for ${configuration.FunctionName}`);
      const policies = Object.entries(role.inline).map(([name, policy]) => ({ name, policy }));
      expect(await invoke(role.roleArn, policies), configuration.FunctionName).not.toBe('Allowed');
    }
  });

  it('denies a principal of the stack account with no policy of its own', async () => {
    expect(await invoke(`arn:aws:iam::${stackAccount}:role/unrelated`, [])).not.toBe('Allowed');
  });
});
