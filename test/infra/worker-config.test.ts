import { App, Stack } from 'aws-cdk-lib';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { describe, expect, it } from 'vitest';
import { JobPlatform, type JobTypeInfo, type JobTypeOptions } from '../../infra/constructs/job-platform';
import { RESERVED_ENV_PREFIX } from '../../infra/constructs/job-type-options';
import {
  estimatedEnvironmentBytes,
  LAMBDA_ENVIRONMENT_BYTES,
  UNRESOLVED_VALUE_BYTES,
} from '../../infra/constructs/lambda-environment';
import { OrreryFunction } from '../../infra/constructs/orrery-function';
import { ENV } from '../../shared/config';
import { measure, readAssembly } from './quotas';
import {
  ASSET_METADATA,
  allowedActions,
  flatTemplate,
  functionEnv,
  logicalId,
  resource,
  roleStatements,
  SKIP_BUNDLING,
  tempOutdir,
  testApp,
} from './support';

const entry = 'functions/jobs/echo.ts';
const spec = (type: string): JobTypeInfo => ({ type, timeoutMs: 10_000 });

/** A platform with two types: `reports`, with `options`, and `email`, left alone. */
function twoTypes(options: Partial<JobTypeOptions>, stack = new Stack(testApp(), 'T')) {
  const platform = new JobPlatform(stack, 'Platform');
  const reports = platform.addJobType({ spec: spec('reports'), entry, ...options });
  const email = platform.addJobType({ spec: spec('email'), entry });
  return { stack, platform, reports, email };
}

describe('the 4 KB environment check of every Orrery function', () => {
  it('counts keys and values as the JSON Lambda stores, and each value resolved at deploy time as 128 bytes', () => {
    expect(estimatedEnvironmentBytes({ A: 'é' })).toBe('{"A":"é"}'.length + 1);
    const bucket = new Bucket(new Stack(testApp(), 'T'), 'Bucket');
    expect(estimatedEnvironmentBytes({ B: bucket.bucketName })).toBe('{"B":""}'.length + UNRESOLVED_VALUE_BYTES);
    expect(estimatedEnvironmentBytes({ B: `s3://${bucket.bucketName}/in/` })).toBe(
      '{"B":"s3:///in/"}'.length + UNRESOLVED_VALUE_BYTES,
    );
  });

  it('refuses a function whose environment exceeds 4 KB, naming it and its largest variables', () => {
    const stack = new Stack(testApp(), 'T');
    const big = { CONFIG: 'x'.repeat(LAMBDA_ENVIRONMENT_BYTES) };
    expect(() => new OrreryFunction(stack, 'Fn', { entry, description: 'Billing', environment: big })).toThrow(
      /^Billing: the environment variables take about 41\d\d bytes .* Lambda allows 4096\. Largest: CONFIG \(4\d{3} bytes\), NODE_OPTIONS/,
    );
  });

  it('counts values CloudFormation resolves later, which the literal text alone would let through', () => {
    const stack = new Stack(testApp(), 'T');
    const bucket = new Bucket(stack, 'Bucket');
    const names = Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`BUCKET_${i}`, bucket.bucketName]));
    expect(() => new OrreryFunction(stack, 'Fn', { entry, environment: names })).toThrow(/^Fn: .* Lambda allows 4096/);
    expect(
      () => new OrreryFunction(stack, 'Fits', { entry, environment: { BUCKET: bucket.bucketName } }),
    ).not.toThrow();
  });
});

describe('addJobType environment', () => {
  it("lands on that type's worker only, beside Orrery's variables, tokens resolved by CloudFormation", () => {
    const stack = new Stack(testApp(), 'T');
    const bucket = new Bucket(stack, 'Reports');
    const { platform, reports, email } = twoTypes(
      { environment: { MAILER_URL: 'https://mailer.example.com', REPORTS_BUCKET: bucket.bucketName } },
      stack,
    );
    const template = flatTemplate(stack);
    const env = functionEnv(template, logicalId(reports.worker.handler));
    expect(env.MAILER_URL).toBe('https://mailer.example.com');
    expect(env.REPORTS_BUCKET).toEqual({ Ref: logicalId(bucket) });
    expect(env[ENV.table]).toBeDefined();
    expect(env[ENV.maxReceiveCount]).toBe('30');
    for (const other of [email.worker.handler, platform.api.handler, platform.supervisor.handler]) {
      const otherEnv = functionEnv(template, logicalId(other));
      expect(Object.keys(otherEnv), other.node.path).not.toContain('MAILER_URL');
      expect(Object.keys(otherEnv), other.node.path).not.toContain('REPORTS_BUCKET');
    }
  });

  it.each(['ORRERY_TABLE', 'ORRERY_MAX_RECEIVE_COUNT', 'ORRERY_ANYTHING_LATER', 'NODE_OPTIONS'])(
    "refuses %s, a name of Orrery's own, naming the key",
    (name) => {
      const stack = new Stack(testApp(), 'T');
      const platform = new JobPlatform(stack, 'Platform');
      expect(() => platform.addJobType({ spec: spec('reports'), entry, environment: { [name]: 'x' } })).toThrow(
        new RegExp(`^job type "reports": environment variable ${name} collides with Orrery's own`),
      );
      expect(platform.jobTypes.size).toBe(0);
    },
  );

  it("reserves a prefix that covers every variable Orrery sets, today's and later ones", () => {
    for (const name of Object.values(ENV)) expect(name.startsWith(RESERVED_ENV_PREFIX), name).toBe(true);
  });

  it.each(['1ST', 'MAILER-URL', 'X', 'MAILER URL'])(
    'refuses the name %j (Lambda: a letter, then letters, digits, _)',
    (name) => {
      const platform = new JobPlatform(new Stack(testApp(), 'T'), 'Platform');
      expect(() => platform.addJobType({ spec: spec('reports'), entry, environment: { [name]: 'x' } })).toThrow(
        `job type "reports": environment variable name "${name}" must be a letter followed by letters, digits or _`,
      );
    },
  );

  it("counts Orrery's variables and the type's together against 4 KB, and what it accepts deploys within 4 KB", () => {
    const attempt = (bytes: number) => {
      const app = new App({ outdir: tempOutdir('worker-env'), context: { ...SKIP_BUNDLING, ...ASSET_METADATA } });
      const platform = new JobPlatform(new Stack(app, 'T'), 'Platform');
      const options = { spec: spec('reports'), entry, environment: { PAD: 'x'.repeat(bytes) } };
      return { app, add: () => platform.addJobType(options) };
    };
    // 3.5 KB of the type's own would fit alone; with Orrery's variables the worker is past 4 KB
    let message = '';
    try {
      attempt(3500).add();
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(
      /^Orrery worker for job type "reports": the environment variables take about \d+ bytes .*Largest: PAD \(3\d{3} bytes\)/,
    );
    // `,"PAD":"<value>"`: the value and 9 bytes
    const orrerys = Number(/about (\d+) bytes/.exec(message)?.[1]) - (3500 + 9);
    expect(orrerys).toBeGreaterThan(500);
    const largest = LAMBDA_ENVIRONMENT_BYTES - orrerys - 9;
    expect(() => attempt(largest + 1).add()).toThrow(/Lambda allows 4096/);

    const fits = attempt(largest);
    fits.add();
    // resolved as AWS would, with generated names as long as AWS makes them: still within 4 KB
    const figures = measure(readAssembly(fits.app));
    const worker = figures.filter((f) => f.what.startsWith('environment of') && f.stack.includes('TypeReports'));
    expect(worker).toHaveLength(1);
    expect(worker[0]?.value).toBeLessThanOrEqual(LAMBDA_ENVIRONMENT_BYTES);
    expect(worker[0]?.value).toBeGreaterThan(LAMBDA_ENVIRONMENT_BYTES - 200);
  });
});

describe('addJobType memorySize', () => {
  it("sizes that type's worker only", () => {
    const { stack, reports, email } = twoTypes({ memorySize: 2048 });
    const template = flatTemplate(stack);
    expect(resource(template, logicalId(reports.worker.handler)).Properties?.MemorySize).toBe(2048);
    expect(resource(template, logicalId(email.worker.handler)).Properties?.MemorySize).toBe(512);
  });
});

describe('grants to a worker', () => {
  it("a secret and an S3 bucket granted read land on that worker's role only", () => {
    const { stack, platform, reports, email } = twoTypes({});
    const bucket = new Bucket(stack, 'Reports');
    const secret = new Secret(stack, 'MailerKey');
    bucket.grantRead(reports.worker);
    secret.grantRead(reports.worker);
    expect(reports.worker.grantPrincipal).toBe(reports.worker.handler.executionRole);

    const template = flatTemplate(stack);
    const bucketArn = { 'Fn::GetAtt': [logicalId(bucket), 'Arn'] };
    const granted = allowedActions(roleStatements(template, logicalId(reports.worker.handler.executionRole)));
    expect(granted).toContainEqual({
      action: 's3:GetObject*',
      resources: JSON.stringify([bucketArn, { 'Fn::Join': ['', [bucketArn, '/*']] }]),
    });
    expect(granted).toContainEqual({
      action: 'secretsmanager:GetSecretValue',
      resources: JSON.stringify({ Ref: logicalId(secret) }),
    });

    const others = [email.worker.handler, platform.api.handler, platform.supervisor.handler];
    // (every function has grants on the platform's own payload bucket: none names this bucket or secret)
    for (const other of others) {
      const granted = allowedActions(roleStatements(template, logicalId(other.executionRole)));
      expect(
        granted.filter(
          (a) =>
            /^(s3|secretsmanager):/.test(a.action) &&
            (a.resources.includes(logicalId(bucket)) || a.resources.includes(logicalId(secret))),
        ),
        other.node.path,
      ).toEqual([]);
    }
  });
});
