import { describe, expect, it } from 'vitest';
import { principalFromAuthorizer, principalId } from '../../shared/core/access';

describe('principalId', () => {
  it.each([
    ['arn:aws:sts::123456789012:assumed-role/billing/i-0abc', 'arn:aws:iam::123456789012:role/billing'],
    ['arn:aws:iam::123456789012:role/service/billing', 'arn:aws:iam::123456789012:role/billing'],
    ['arn:aws:iam::123456789012:role/billing', 'arn:aws:iam::123456789012:role/billing'],
    ['arn:aws:iam::123456789012:user/ops/alice', 'arn:aws:iam::123456789012:user/alice'],
    ['arn:aws:iam::123456789012:root', 'arn:aws:iam::123456789012:root'],
    ['arn:aws-cn:sts::123456789012:assumed-role/r/s', 'arn:aws-cn:iam::123456789012:role/r'],
  ])('%s → %s', (arn, id) => {
    expect(principalId(arn)).toBe(id);
  });

  it.each([
    'arn:aws:sts::123456789012:federated-user/bob',
    'arn:aws:iam::12345:role/short-account',
    'not an arn',
    'arn:aws:iam::123456789012:group/admins',
  ])('has no key for %s', (arn) => {
    expect(principalId(arn)).toBeUndefined();
  });
});

describe('principalFromAuthorizer', () => {
  it('keeps the session of an assumed role for the audit', () => {
    expect(
      principalFromAuthorizer({
        accountId: '123456789012',
        userArn: 'arn:aws:sts::123456789012:assumed-role/billing/lambda-session',
        callerId: 'AROAEXAMPLE:lambda-session',
      }),
    ).toEqual({
      id: 'arn:aws:iam::123456789012:role/billing',
      account: '123456789012',
      arn: 'arn:aws:sts::123456789012:assumed-role/billing/lambda-session',
      session: 'lambda-session',
    });
  });

  it('has no principal without an IAM authorizer context', () => {
    expect(principalFromAuthorizer(undefined)).toBeUndefined();
    expect(principalFromAuthorizer({ accountId: '123456789012' })).toBeUndefined();
  });
});
