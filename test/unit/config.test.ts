import { describe, expect, it } from 'vitest';
import {
  ENV,
  namedRoute,
  type PlatformConfig,
  platformConfigFromEnv,
  platformConfigToEnv,
  requireEnv,
  routeOf,
  typesDigest,
  withTypes,
} from '../../shared/config';
import { ConfigError } from '../../shared/errors';

const queues = {
  urlBase: 'https://sqs.eu-west-1.amazonaws.com/123456789012/',
  arnBase: 'arn:aws:sqs:eu-west-1:123456789012:',
  prefix: 'Orrery',
};
const routes = {
  echo: {
    queueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/Orrery_ready_echo',
    queueArn: 'arn:aws:sqs:eu-west-1:123456789012:Orrery_ready_echo',
    dlqUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/Orrery_dlq_echo',
    dlqArn: 'arn:aws:sqs:eu-west-1:123456789012:Orrery_dlq_echo',
  },
};

const env = (overrides: Record<string, string | undefined> = {}): Record<string, string | undefined> => ({
  ORRERY_TABLE: 'orrery-jobs',
  ORRERY_QUEUE_URL_BASE: queues.urlBase,
  ORRERY_QUEUE_ARN_BASE: queues.arnBase,
  ORRERY_QUEUE_PREFIX: queues.prefix,
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
  it('reads every variable and applies the defaults, with routes for the types it is given', () => {
    expect(platformConfigFromEnv(env(), ['echo'])).toEqual({
      tableName: 'orrery-jobs',
      routes,
      queues,
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
      queueUrlBase: 'ORRERY_QUEUE_URL_BASE',
      queueArnBase: 'ORRERY_QUEUE_ARN_BASE',
      queuePrefix: 'ORRERY_QUEUE_PREFIX',
      typesDigest: 'ORRERY_TYPES_DIGEST',
      maxReceiveCount: 'ORRERY_MAX_RECEIVE_COUNT',
      scheduleGroup: 'ORRERY_SCHEDULE_GROUP',
      schedulerRoleArn: 'ORRERY_SCHEDULER_ROLE_ARN',
      grantsParameter: 'ORRERY_GRANTS_PARAMETER',
      retentionDays: 'ORRERY_RETENTION_DAYS',
      logLevel: 'ORRERY_LOG_LEVEL',
      tracing: 'ORRERY_TRACING',
      metricsNamespace: 'ORRERY_METRICS_NAMESPACE',
      payloadBucket: 'ORRERY_PAYLOAD_BUCKET',
    });
  });

  it.each([
    'ORRERY_TABLE',
    'ORRERY_QUEUE_URL_BASE',
    'ORRERY_QUEUE_ARN_BASE',
    'ORRERY_QUEUE_PREFIX',
    'ORRERY_SCHEDULE_GROUP',
    'ORRERY_SCHEDULER_ROLE_ARN',
  ])('throws a ConfigError naming %s when it is missing or empty', (name) => {
    for (const value of [undefined, '']) {
      const error = configError(() => platformConfigFromEnv(env({ [name]: value })));
      expect(error.message).toBe(`environment variable ${name} is not set`);
      expect(error.code).toBe('config_error');
    }
  });

  it('requireEnv returns the value when set', () => {
    expect(requireEnv({ X: 'y' }, 'X')).toBe('y');
    expect(configError(() => requireEnv({}, 'X')).message).toBe('environment variable X is not set');
  });

  it.each([
    [
      'ORRERY_QUEUE_PREFIX',
      'has_underscore',
      'ORRERY_QUEUE_PREFIX must be 1-32 letters, digits or - (got has_underscore)',
    ],
    [
      'ORRERY_QUEUE_PREFIX',
      'x'.repeat(33),
      `ORRERY_QUEUE_PREFIX must be 1-32 letters, digits or - (got ${'x'.repeat(33)})`,
    ],
    [
      'ORRERY_QUEUE_URL_BASE',
      'https://sqs.eu-west-1.amazonaws.com/1',
      'ORRERY_QUEUE_URL_BASE must be an http(s) URL ending with / (got https://sqs.eu-west-1.amazonaws.com/1)',
    ],
    [
      'ORRERY_QUEUE_ARN_BASE',
      'arn:aws:sqs:eu-west-1:1',
      'ORRERY_QUEUE_ARN_BASE must look like arn:<partition>:sqs:<region>:<account>: (got arn:aws:sqs:eu-west-1:1)',
    ],
    ['ORRERY_MAX_RECEIVE_COUNT', '0', 'ORRERY_MAX_RECEIVE_COUNT must be an integer from 1 to 1000 (got 0)'],
    ['ORRERY_MAX_RECEIVE_COUNT', 'x', 'ORRERY_MAX_RECEIVE_COUNT must be an integer from 1 to 1000 (got x)'],
  ])('rejects %s=%j', (name, raw, message) => {
    expect(configError(() => platformConfigFromEnv(env({ [name]: raw }))).message).toBe(message);
  });

  it("derives any type's queues from the naming, and the worker's receive count for its own", () => {
    const config = platformConfigFromEnv(env({ ORRERY_MAX_RECEIVE_COUNT: '12' }), ['echo']);
    expect(config.routes).toEqual({ echo: { ...routes.echo, maxReceiveCount: 12 } });
    // another type (a child the worker releases) is found by its name, without a list of URLs
    expect(routeOf(config, 'send-email')).toEqual({
      queueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/Orrery_ready_send-email',
      queueArn: 'arn:aws:sqs:eu-west-1:123456789012:Orrery_ready_send-email',
      dlqUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/Orrery_dlq_send-email',
      dlqArn: 'arn:aws:sqs:eu-west-1:123456789012:Orrery_dlq_send-email',
    });
    expect(withTypes(config, ['a', 'b']).routes.b).toEqual({ ...namedRoute(queues, 'b'), maxReceiveCount: 12 });
    expect(routeOf({ routes: {} }, 'echo')).toBeUndefined();
  });

  it('digests the deployed types in constant size, whatever their order or number', () => {
    expect(typesDigest(['b', 'a'])).toBe(typesDigest(['a', 'b', 'a']));
    expect(typesDigest(['a', 'b'])).not.toBe(typesDigest(['a', 'c']));
    expect(typesDigest(['a', 'b'])).toMatch(/^[0-9a-f]{20}$/);
    const many = Array.from({ length: 1000 }, (_, i) => `type-${i}-${'x'.repeat(30)}`);
    expect(typesDigest(many)).toMatch(/^[0-9a-f]{20}$/);
    const digest = typesDigest(['echo']);
    expect(platformConfigFromEnv(env({ ORRERY_TYPES_DIGEST: digest })).typesDigest).toBe(digest);
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

  it('reports the first missing variable before malformed optional ones', () => {
    const error = configError(() => platformConfigFromEnv({ ORRERY_RETENTION_DAYS: 'x' }));
    expect(error.message).toBe('environment variable ORRERY_TABLE is not set');
  });
});

describe('platformConfigToEnv', () => {
  const config: PlatformConfig = {
    tableName: 't',
    routes: { echo: routes.echo, 'send-email': namedRoute(queues, 'send-email') },
    queues,
    typesDigest: typesDigest(['echo', 'send-email']),
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
      ORRERY_QUEUE_URL_BASE: queues.urlBase,
      ORRERY_QUEUE_ARN_BASE: queues.arnBase,
      ORRERY_QUEUE_PREFIX: 'Orrery',
      ORRERY_TYPES_DIGEST: typesDigest(['echo', 'send-email']),
      ORRERY_SCHEDULE_GROUP: 'g',
      ORRERY_SCHEDULER_ROLE_ARN: 'arn:aws:iam::1:role/r',
      ORRERY_RETENTION_DAYS: '14',
      ORRERY_LOG_LEVEL: 'debug',
      ORRERY_TRACING: 'true',
      ORRERY_METRICS_NAMESPACE: 'Orrery/test',
    });
  });

  it('round-trips through platformConfigFromEnv', () => {
    expect(platformConfigFromEnv(platformConfigToEnv(config), ['echo', 'send-email'])).toEqual(config);
    const read = platformConfigFromEnv(env({ ORRERY_RETENTION_DAYS: '90', ORRERY_LOG_LEVEL: 'warn' }), ['echo']);
    expect(platformConfigFromEnv(platformConfigToEnv(read), ['echo'])).toEqual({
      ...read,
      typesDigest: typesDigest(['echo']),
    });
  });

  it('refuses routes that do not follow the queue naming, or a configuration without one', () => {
    const odd = { ...config, routes: { echo: { queueUrl: 'https://elsewhere/q', queueArn: 'arn:aws:sqs:x:1:q' } } };
    expect(configError(() => platformConfigToEnv(odd)).message).toBe(
      'the route of "echo" does not follow the queue naming (https://elsewhere/q)',
    );
    const { queues: _none, ...bare } = config;
    expect(configError(() => platformConfigToEnv(bare)).message).toBe(
      'a configuration without queue naming has no environment form',
    );
  });
});
