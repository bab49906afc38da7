import { Stack } from 'aws-cdk-lib';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { describe, expect, it } from 'vitest';
import {
  estimatedEnvironmentBytes,
  LAMBDA_ENVIRONMENT_BYTES,
  UNRESOLVED_VALUE_BYTES,
} from '../../infra/constructs/lambda-environment';
import { OrreryFunction } from '../../infra/constructs/orrery-function';
import { testApp } from './support';

const entry = 'functions/jobs/echo.ts';

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
