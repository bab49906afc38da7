/**
 * The payload bucket (infra/constructs/payload-bucket.ts): its settings, and its grants proven by
 * evaluating the S3 requests each function makes (shared/aws/s3-blob-store.ts) against the
 * synthesized role policies with @cloud-copilot/iam-simulate, as test/deployed/iam-proof.ts does
 * for the deployed run: HEAD and GET are `s3:GetObject`, PUT (and a presigned PUT, authorised by
 * its signer) `s3:PutObject`, and a missing key answers 404 only with `s3:ListBucket`.
 */
import { runSimulation } from '@cloud-copilot/iam-simulate';
import { describe, expect, it } from 'vitest';
import { JOURNAL_RETENTION_DAYS } from '../../shared/core/journal';
import {
  asArray,
  logicalId,
  type PolicyStatementJson,
  prop,
  render,
  resources,
  roleStatements,
  synthOrrery,
} from './support';

const { stack, template } = synthOrrery();
const platform = stack.platform;
const ACCOUNT = '123456789012';
const REGION = 'eu-west-1';

/** A rendered value with the pseudo parameters as CloudFormation would give them. */
function resolved(value: unknown): string {
  const pseudo: Record<string, string> = { 'AWS::Partition': 'aws', 'AWS::AccountId': ACCOUNT, 'AWS::Region': REGION };
  // render() writes a Ref as `${Ref:<name>}`
  return render(value).replace(/\$\{Ref:(AWS::[A-Za-z]+)\}/g, (whole, name: string) => pseudo[name] ?? whole);
}

const bucketName = resolved(stack.resolve(platform.payloads.bucketArn)).replace('arn:aws:s3:::', '');

function policyOf(statements: PolicyStatementJson[]) {
  return {
    Version: '2012-10-17',
    Statement: statements.map((s) => ({
      ...s,
      Resource: asArray(s.Resource as unknown).map((r) => resolved(r)),
    })),
  };
}

async function allowed(statements: PolicyStatementJson[], action: string, resource: string): Promise<boolean> {
  const response = await runSimulation(
    {
      request: {
        principal: `arn:aws:iam::${ACCOUNT}:role/fn`,
        action,
        resource: { resource, accountId: ACCOUNT },
        contextVariables: { 'aws:SecureTransport': 'true' },
      },
      identityPolicies: [{ name: 'fn', policy: policyOf(statements) }],
      serviceControlPolicies: [],
      resourceControlPolicies: [],
    },
    {},
  );
  if (response.resultType === 'error') throw new Error(JSON.stringify(response.errors));
  return response.overallResult === 'Allowed';
}

const object = (key: string) => `arn:aws:s3:::${bucketName}/${key}`;
const bucket = `arn:aws:s3:::${bucketName}`;

describe('payload bucket', () => {
  it('is encrypted, blocks public access, refuses plain HTTP, and expires objects with the retention', () => {
    const [bucketRes] = Object.values(resources(template, 'AWS::S3::Bucket'));
    expect(prop(bucketRes, 'PublicAccessBlockConfiguration')).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(JSON.stringify(prop(bucketRes, 'BucketEncryption'))).toContain('AES256');
    const rules = prop<{ Rules: { ExpirationInDays?: number; Status: string }[] }>(bucketRes, 'LifecycleConfiguration');
    expect(rules.Rules[0]).toMatchObject({ ExpirationInDays: JOURNAL_RETENTION_DAYS + 30, Status: 'Enabled' });
    const policies = Object.values(resources(template, 'AWS::S3::BucketPolicy'));
    expect(JSON.stringify(policies)).toContain('"aws:SecureTransport":"false"');
    expect(bucketName).toMatch(/^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/);
  });

  it("allows the API's requests and nothing of the workers' own", async () => {
    const api = roleStatements(template, logicalId(platform.api.handler.executionRole));
    // an inline payload over 256 KiB, a presigned upload, and reading an upload back
    expect(await allowed(api, 's3:PutObject', object('p/job-1/abc'))).toBe(true);
    expect(await allowed(api, 's3:PutObject', object('u/0123456789abcdef0123456789abcdef'))).toBe(true);
    expect(await allowed(api, 's3:GetObject', object('u/0123456789abcdef0123456789abcdef'))).toBe(true);
    expect(await allowed(api, 's3:PutObject', object('g/job-1/abc'))).toBe(true); // a signal over 64 KiB
    expect(await allowed(api, 's3:ListBucket', bucket)).toBe(true);
    // results and step results are the workers'
    expect(await allowed(api, 's3:GetObject', object('s/job-1/1-abc'))).toBe(false);
    expect(await allowed(api, 's3:PutObject', object('r/job-1/1-abc'))).toBe(false);
    expect(await allowed(api, 's3:DeleteObject', object('p/job-1/abc'))).toBe(false);
  });

  it("allows each worker's requests: read every kind of value, write only results and step results", async () => {
    for (const { worker } of platform.jobTypes.values()) {
      const statements = roleStatements(template, logicalId(worker.handler.executionRole));
      for (const key of [
        'p/job-1/a',
        'u/0123456789abcdef0123456789abcdef',
        's/job-1/1-a',
        'g/job-1/a',
        'r/job-1/1-a',
      ]) {
        expect(await allowed(statements, 's3:GetObject', object(key)), key).toBe(true);
      }
      expect(await allowed(statements, 's3:PutObject', object('r/job-1/1-a'))).toBe(true);
      expect(await allowed(statements, 's3:PutObject', object('s/job-1/1-a'))).toBe(true);
      expect(await allowed(statements, 's3:ListBucket', bucket)).toBe(true);
      expect(await allowed(statements, 's3:PutObject', object('p/job-1/a'))).toBe(false);
      expect(await allowed(statements, 's3:PutObject', object('u/0123456789abcdef0123456789abcdef'))).toBe(false);
    }
  });

  it('gives the supervisor no access to it', async () => {
    const supervisor = roleStatements(template, logicalId(platform.supervisor.handler.executionRole));
    expect(await allowed(supervisor, 's3:GetObject', object('p/job-1/a'))).toBe(false);
  });
});
