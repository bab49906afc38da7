import { describe, expect, it } from 'vitest';
import { ENV, type PlatformConfig, platformConfigFromEnv, platformConfigToEnv, requireEnv } from '../../shared/config';
import { ConfigError } from '../../shared/errors';

const routes = {
  echo: {
    queueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/orrery-echo',
    queueArn: 'arn:aws:sqs:eu-west-1:123456789012:orrery-echo',
  },
};

const env = (overrides: Record<string, string | undefined> = {}): Record<string, string | undefined> => ({
  ORRERY_TABLE: 'orrery-jobs',
  ORRERY_ROUTES: JSON.stringify(routes),
  ORRERY_SCHEDULE_GROUP: 'orrery',
  ORRERY_SCHEDULER_ROLE_ARN: 'arn:aws:iam::123456789012:role/orrery-scheduler',
  ...overrides,
});

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}

describe('platformConfigFromEnv', () => {
  it('reads every variable and applies the defaults', () => {
    expect(platformConfigFromEnv(env())).toEqual({
      tableName: 'orrery-jobs',
      routes,
      scheduleGroup: 'orrery',
      schedulerRoleArn: 'arn:aws:iam::123456789012:role/orrery-scheduler',
      retentionDays: 30,
      logLevel: 'info',
      tracing: false,
      metricsNamespace: 'Orrery',
    });
  });

  it('uses the documented variable names', () => {
    expect(ENV).toEqual({
      table: 'ORRERY_TABLE',
      routes: 'ORRERY_ROUTES',
      scheduleGroup: 'ORRERY_SCHEDULE_GROUP',
      schedulerRoleArn: 'ORRERY_SCHEDULER_ROLE_ARN',
      retentionDays: 'ORRERY_RETENTION_DAYS',
      logLevel: 'ORRERY_LOG_LEVEL',
      tracing: 'ORRERY_TRACING',
      metricsNamespace: 'ORRERY_METRICS_NAMESPACE',
    });
  });

  it.each(['ORRERY_TABLE', 'ORRERY_ROUTES', 'ORRERY_SCHEDULE_GROUP', 'ORRERY_SCHEDULER_ROLE_ARN'])(
    'throws a ConfigError naming %s when it is missing or empty',
    (name) => {
      for (const value of [undefined, '']) {
        const error = configError(() => platformConfigFromEnv(env({ [name]: value })));
        expect(error.message).toBe(`environment variable ${name} is not set`);
        expect(error.code).toBe('config_error');
      }
    },
  );

  it('requireEnv returns the value when set', () => {
    expect(requireEnv({ X: 'y' }, 'X')).toBe('y');
    expect(configError(() => requireEnv({}, 'X')).message).toBe('environment variable X is not set');
  });

  it.each([
    ['not JSON', '{echo', 'ORRERY_ROUTES is not valid JSON'],
    ['an array', '[]', 'ORRERY_ROUTES must be a JSON object of { type: { queueUrl, queueArn } }'],
    ['null', 'null', 'ORRERY_ROUTES must be a JSON object of { type: { queueUrl, queueArn } }'],
    ['a string', '"echo"', 'ORRERY_ROUTES must be a JSON object of { type: { queueUrl, queueArn } }'],
    ['a route without queueArn', '{"echo":{"queueUrl":"u"}}', 'ORRERY_ROUTES.echo needs string queueUrl and queueArn'],
    ['a null route', '{"echo":null}', 'ORRERY_ROUTES.echo needs string queueUrl and queueArn'],
    [
      'a numeric queueUrl',
      '{"echo":{"queueUrl":1,"queueArn":"a"}}',
      'ORRERY_ROUTES.echo needs string queueUrl and queueArn',
    ],
  ])('rejects ORRERY_ROUTES that is %s', (_label, raw, message) => {
    expect(configError(() => platformConfigFromEnv(env({ ORRERY_ROUTES: raw }))).message).toBe(message);
  });

  it('keeps only queueUrl and queueArn of each route', () => {
    const raw = JSON.stringify({ echo: { ...routes.echo, extra: 'x' }, sleep: { queueUrl: 'u2', queueArn: 'a2' } });
    expect(platformConfigFromEnv(env({ ORRERY_ROUTES: raw })).routes).toEqual({
      echo: routes.echo,
      sleep: { queueUrl: 'u2', queueArn: 'a2' },
    });
  });

  it('accepts an empty route table', () => {
    expect(platformConfigFromEnv(env({ ORRERY_ROUTES: '{}' })).routes).toEqual({});
  });

  it.each([
    ['1', 1],
    ['7', 7],
    ['3650', 3650],
    ['', 30],
  ])('reads ORRERY_RETENTION_DAYS=%j as %i', (raw, days) => {
    expect(platformConfigFromEnv(env({ ORRERY_RETENTION_DAYS: raw })).retentionDays).toBe(days);
  });

  it.each(['0', '3651', '-1', '1.5', 'thirty', 'NaN'])('rejects ORRERY_RETENTION_DAYS=%j', (raw) => {
    expect(configError(() => platformConfigFromEnv(env({ ORRERY_RETENTION_DAYS: raw }))).message).toBe(
      `ORRERY_RETENTION_DAYS must be an integer from 1 to 3650 (got ${raw})`,
    );
  });

  it.each(['debug', 'info', 'warn', 'error', 'silent'] as const)('reads ORRERY_LOG_LEVEL=%s', (level) => {
    expect(platformConfigFromEnv(env({ ORRERY_LOG_LEVEL: level })).logLevel).toBe(level);
  });

  it.each(['INFO', 'verbose', 'trace'])('rejects ORRERY_LOG_LEVEL=%s', (raw) => {
    expect(configError(() => platformConfigFromEnv(env({ ORRERY_LOG_LEVEL: raw }))).message).toBe(
      `ORRERY_LOG_LEVEL must be one of debug, info, warn, error, silent (got ${raw})`,
    );
  });

  it.each([
    ['true', true],
    ['false', false],
    ['', false],
  ])('reads ORRERY_TRACING=%j', (raw, on) => {
    expect(platformConfigFromEnv(env({ ORRERY_TRACING: raw })).tracing).toBe(on);
  });

  it('rejects an ORRERY_TRACING that is not true or false', () => {
    expect(configError(() => platformConfigFromEnv(env({ ORRERY_TRACING: '1' }))).message).toBe(
      'ORRERY_TRACING must be true or false (got 1)',
    );
  });

  it('reads ORRERY_METRICS_NAMESPACE, and rejects one CloudWatch would refuse or keeps for AWS', () => {
    expect(platformConfigFromEnv(env({ ORRERY_METRICS_NAMESPACE: 'Orrery/prod' })).metricsNamespace).toBe(
      'Orrery/prod',
    );
    for (const raw of ['AWS/Lambda', 'a'.repeat(256), 'jobs!']) {
      expect(configError(() => platformConfigFromEnv(env({ ORRERY_METRICS_NAMESPACE: raw }))).message).toMatch(
        /^ORRERY_METRICS_NAMESPACE is not a CloudWatch namespace of our own/,
      );
    }
  });

  it("reads a route's maxReceiveCount, and rejects one that is not a positive integer", () => {
    const withCount = { echo: { ...routes.echo, maxReceiveCount: 30 } };
    expect(platformConfigFromEnv(env({ ORRERY_ROUTES: JSON.stringify(withCount) })).routes).toEqual(withCount);
    const bad = { echo: { ...routes.echo, maxReceiveCount: 0 } };
    expect(configError(() => platformConfigFromEnv(env({ ORRERY_ROUTES: JSON.stringify(bad) }))).message).toBe(
      'ORRERY_ROUTES.echo.maxReceiveCount must be a positive integer',
    );
  });

  it('reports the first missing variable before malformed optional ones', () => {
    const error = configError(() => platformConfigFromEnv({ ORRERY_RETENTION_DAYS: 'x' }));
    expect(error.message).toBe('environment variable ORRERY_TABLE is not set');
  });
});

describe('platformConfigToEnv', () => {
  const config: PlatformConfig = {
    tableName: 't',
    routes: { echo: routes.echo, 'send-email': { queueUrl: 'u', queueArn: 'a' } },
    scheduleGroup: 'g',
    schedulerRoleArn: 'arn:aws:iam::1:role/r',
    retentionDays: 14,
    logLevel: 'debug',
    tracing: true,
    metricsNamespace: 'Orrery/test',
  };

  it('writes every variable as a string', () => {
    expect(platformConfigToEnv(config)).toEqual({
      ORRERY_TABLE: 't',
      ORRERY_ROUTES: JSON.stringify(config.routes),
      ORRERY_SCHEDULE_GROUP: 'g',
      ORRERY_SCHEDULER_ROLE_ARN: 'arn:aws:iam::1:role/r',
      ORRERY_RETENTION_DAYS: '14',
      ORRERY_LOG_LEVEL: 'debug',
      ORRERY_TRACING: 'true',
      ORRERY_METRICS_NAMESPACE: 'Orrery/test',
    });
  });

  it('round-trips through platformConfigFromEnv', () => {
    expect(platformConfigFromEnv(platformConfigToEnv(config))).toEqual(config);
    const read = platformConfigFromEnv(env({ ORRERY_RETENTION_DAYS: '90', ORRERY_LOG_LEVEL: 'warn' }));
    expect(platformConfigFromEnv(platformConfigToEnv(read))).toEqual(read);
  });
});
