import { App, Duration, type PolicyViolation } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { catalog, echoJob } from '../../functions/jobs/catalog';
import { JobPlatform } from '../../infra/constructs/job-platform';
import { OrreryStack } from '../../infra/stack';
import { ENV } from '../../shared/config';
import { METRIC } from '../../shared/core/metrics';
import {
  ASSET_METADATA,
  type CfnResourceJson,
  flatTemplate,
  functionEnv,
  logicalId,
  render,
  resources,
  SKIP_BUNDLING,
  synthOrrery,
  tempOutdir,
  testApp,
} from './support';

interface MetricStat {
  Metric: { Namespace: string; MetricName: string; Dimensions: { Name: string; Value: unknown }[] };
  Period: number;
  Stat: string;
}

interface AlarmJson {
  Namespace?: string;
  MetricName?: string;
  Dimensions?: { Name: string; Value: unknown }[];
  Statistic?: string;
  Period?: number;
  Threshold: number;
  ComparisonOperator: string;
  EvaluationPeriods: number;
  DatapointsToAlarm: number;
  TreatMissingData: string;
  AlarmDescription: string;
  AlarmActions?: unknown[];
  OKActions?: unknown[];
  Metrics?: { Id: string; Expression?: string; MetricStat?: MetricStat; ReturnData?: boolean }[];
}

const { stack, template } = synthOrrery();
const platform = stack.platform;
const types = catalog.map((spec) => spec.type);

function alarms(t: Template): Record<string, AlarmJson> {
  return Object.fromEntries(
    Object.entries(resources(t, 'AWS::CloudWatch::Alarm')).map(([id, r]) => [id, r.Properties as unknown as AlarmJson]),
  );
}

/** The alarm the platform registered as `name` (e.g. `echo:DeadLetters`), as synthesized. */
function alarm(name: string, t: Template = template, p: JobPlatform = platform): AlarmJson {
  const construct = p.alarms.alarms.get(name);
  if (!construct) throw new Error(`no alarm ${name}`);
  const found = alarms(t)[logicalId(construct)];
  if (!found) throw new Error(`alarm ${name} is not in the template`);
  return found;
}

const ON_MISSING_DATA_OK = { TreatMissingData: 'notBreaching', EvaluationPeriods: 1, DatapointsToAlarm: 1 };

describe('alarms', () => {
  it('are four for the platform and five per job type, none with an action by default', () => {
    template.resourceCountIs('AWS::CloudWatch::Alarm', 4 + 5 * types.length);
    expect([...platform.alarms.alarms.keys()].sort()).toEqual(
      [
        'ApiThrottles',
        'SupervisorErrors',
        'SupervisorThrottles',
        'TableThrottles',
        ...types.flatMap((type) =>
          ['DeadLetters', 'FailureRate', 'Held', 'OldestMessage', 'WorkerThrottles'].map((what) => `${type}:${what}`),
        ),
      ].sort(),
    );
    for (const a of Object.values(alarms(template))) {
      expect(a).toMatchObject(ON_MISSING_DATA_OK);
      expect(a.AlarmActions).toBeUndefined();
      expect(a.AlarmDescription.length).toBeGreaterThan(40);
    }
  });

  it("fire when a type's dead-letter queue holds any message", () => {
    for (const type of types) {
      const dlq = logicalId(platform.jobTypes.get(type)?.queues.deadLetterQueue ?? platform);
      expect(alarm(`${type}:DeadLetters`)).toMatchObject({
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [dlq, 'QueueName'] } }],
        Statistic: 'Maximum',
        Period: 60,
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
      });
    }
  });

  it("fire when a type's failure rate, failed / (succeeded + failed) of its EMF metrics, is above 10 %", () => {
    for (const type of types) {
      const a = alarm(`${type}:FailureRate`);
      expect(a).toMatchObject({ Threshold: 0.1, ComparisonOperator: 'GreaterThanThreshold' });
      const expression = a.Metrics?.find((m) => m.Expression);
      expect(expression?.Expression).toBe(
        'IF((FILL(s, 0) + FILL(f, 0)) > 0, FILL(f, 0) / (FILL(s, 0) + FILL(f, 0)), 0)',
      );
      const stats = Object.fromEntries((a.Metrics ?? []).filter((m) => m.MetricStat).map((m) => [m.Id, m.MetricStat]));
      expect(stats).toEqual({
        s: {
          Metric: { Namespace: 'Orrery', MetricName: METRIC.succeeded, Dimensions: [{ Name: 'type', Value: type }] },
          Period: 300,
          Stat: 'Sum',
        },
        f: {
          Metric: { Namespace: 'Orrery', MetricName: METRIC.failed, Dimensions: [{ Name: 'type', Value: type }] },
          Period: 300,
          Stat: 'Sum',
        },
      });
    }
  });

  it('fire when a job of a type is held for an operator (its replay diverged): JobsHeld counts no failure', () => {
    // a held job runs nothing until someone retries, reruns or cancels it: the failure rate does not see it
    for (const type of types) {
      expect(alarm(`${type}:Held`)).toMatchObject({
        Namespace: 'Orrery',
        MetricName: METRIC.held,
        Dimensions: [{ Name: 'type', Value: type }],
        Statistic: 'Sum',
        Period: 300,
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
      });
    }
  });

  it("fire when a type's ready queue has a message older than an hour", () => {
    for (const type of types) {
      const queue = logicalId(platform.jobTypes.get(type)?.queues.queue ?? platform);
      expect(alarm(`${type}:OldestMessage`)).toMatchObject({
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateAgeOfOldestMessage',
        Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queue, 'QueueName'] } }],
        Statistic: 'Maximum',
        Period: 60,
        Threshold: 3600,
        ComparisonOperator: 'GreaterThanThreshold',
      });
    }
  });

  it('fire on any supervisor error, and on any throttle of the API, the supervisor or a worker', () => {
    const supervisor = logicalId(platform.supervisor.handler);
    expect(alarm('SupervisorErrors')).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: supervisor } }],
      Statistic: 'Sum',
      Period: 300,
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    const functions: [string, string][] = [
      ['ApiThrottles', logicalId(platform.api.handler)],
      ['SupervisorThrottles', supervisor],
      ...types.map((type): [string, string] => [
        `${type}:WorkerThrottles`,
        logicalId(platform.jobTypes.get(type)?.worker.handler ?? platform),
      ]),
    ];
    for (const [name, fn] of functions) {
      expect(alarm(name), name).toMatchObject({
        Namespace: 'AWS/Lambda',
        MetricName: 'Throttles',
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: fn } }],
        Statistic: 'Sum',
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
      });
    }
  });

  it('fire when the job table throttles any of the operations Orrery calls (ThrottledRequests, summed)', () => {
    const a = alarm('TableThrottles');
    expect(a).toMatchObject({ Threshold: 0, ComparisonOperator: 'GreaterThanThreshold' });
    const table = logicalId(platform.jobTable.table);
    const operations = (a.Metrics ?? [])
      .filter((m) => m.MetricStat)
      .map((m) => {
        const metric = m.MetricStat?.Metric;
        expect(metric?.Namespace).toBe('AWS/DynamoDB');
        expect(metric?.MetricName).toBe('ThrottledRequests');
        expect(metric?.Dimensions).toContainEqual({ Name: 'TableName', Value: { Ref: table } });
        return metric?.Dimensions.find((d) => d.Name === 'Operation')?.Value;
      });
    expect(operations.sort()).toEqual(
      ['BatchGetItem', 'GetItem', 'PutItem', 'Query', 'TransactWriteItems', 'UpdateItem'].sort(),
    );
  });

  it('take the thresholds and the metrics namespace given', () => {
    const custom = new OrreryStack(testApp(), 'Custom', {
      platform: {
        failureRateThreshold: 0.25,
        oldestMessageAgeThreshold: Duration.minutes(20),
        metricsNamespace: 'Orrery/prod',
      },
    });
    const t = flatTemplate(custom);
    expect(alarm('echo:FailureRate', t, custom.platform).Threshold).toBe(0.25);
    expect(alarm('echo:OldestMessage', t, custom.platform).Threshold).toBe(1200);
    const namespaces = (alarm('echo:FailureRate', t, custom.platform).Metrics ?? []).flatMap((m) =>
      m.MetricStat ? [m.MetricStat.Metric.Namespace] : [],
    );
    expect(namespaces).toEqual(['Orrery/prod', 'Orrery/prod']);
    expect(render(functionEnv(t, logicalId(custom.platform.api.handler))[ENV.metricsNamespace])).toBe('Orrery/prod');
  });

  it.each([0, 1, -0.1, Number.NaN])('refuse failureRateThreshold %s', (failureRateThreshold) => {
    expect(() => new OrreryStack(testApp(), 'Bad', { platform: { failureRateThreshold } })).toThrow(
      /failureRateThreshold must be between 0 and 1/,
    );
  });

  it.each(['AWS/Lambda', '', 'jobs!'])('refuse metricsNamespace %j', (metricsNamespace) => {
    expect(() => new OrreryStack(testApp(), 'Bad', { platform: { metricsNamespace } })).toThrow(
      /metricsNamespace must be a CloudWatch namespace of our own/,
    );
  });
});

describe('dashboard', () => {
  function body(t: Template): string {
    const [dashboard] = Object.values(resources(t, 'AWS::CloudWatch::Dashboard')) as CfnResourceJson[];
    return render(dashboard?.Properties?.DashboardBody);
  }

  it('is one dashboard with a row per job type: the job metrics, timings, failure rate, queues, cost, worker and alarms', () => {
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    const parsed = JSON.parse(body(template)) as { widgets: { properties: Record<string, unknown> }[] };
    const text = JSON.stringify(parsed);
    for (const name of Object.values(METRIC)) expect(text, name).toContain(`"${name}"`);
    for (const type of types) {
      expect(text).toContain(`"type","${type}"`);
      expect(text).toContain(`## ${type}`);
      expect(text).toContain(`"title":"${type} alarms"`);
    }
    for (const stat of ['p50', 'p99']) expect(text).toContain(`"stat":"${stat}"`);
    for (const metric of [
      'ApproximateAgeOfOldestMessage',
      'ApproximateNumberOfMessagesVisible',
      'Throttles',
      'Errors',
    ]) {
      expect(text).toContain(`"${metric}"`);
    }
    expect(text).toContain('"title":"Platform alarms"');
    // every alarm appears in an alarm status widget
    const shown = parsed.widgets.flatMap((w) => (w.properties.alarms as string[] | undefined) ?? []);
    expect(shown).toHaveLength(4 + 5 * types.length);
  });

  /** The expressions of the graph titled `title`, as the dashboard body holds them. */
  function graphExpressions(t: Template, title: string): { expression: string; label: string }[] {
    const parsed = JSON.parse(body(t)) as { widgets: { properties: { title?: string; metrics?: unknown[][] } }[] };
    const widget = parsed.widgets.find((w) => w.properties.title === title);
    if (!widget) throw new Error(`no graph ${title}`);
    return (widget.properties.metrics ?? []).flatMap((m) => m.filter((part) => typeof part === 'object')) as {
      expression: string;
      label: string;
    }[];
  }

  it("shows the API's CallsForbidden and OperatorActions, summed over their type dimension, in the metrics namespace", () => {
    // The API writes them as the job metrics are written: dimension `type` (`-` for a call on no one
    // type); a metric with a dimension is only found with it, so the graph sums every `type` value.
    const sum = (namespace: string, metric: string) =>
      `SUM(SEARCH('{${namespace},type} MetricName="${metric}"', 'Sum', 300))`;
    expect(graphExpressions(template, 'API access')).toEqual([
      expect.objectContaining({ expression: sum('Orrery', 'CallsForbidden'), label: 'calls forbidden' }),
      expect.objectContaining({ expression: sum('Orrery', 'OperatorActions'), label: 'operator actions' }),
    ]);
    const custom = new OrreryStack(testApp(), 'AccessNamespace', { platform: { metricsNamespace: 'Orrery/prod' } });
    expect(graphExpressions(flatTemplate(custom), 'API access').map((m) => m.expression)).toEqual([
      sum('Orrery/prod', 'CallsForbidden'),
      sum('Orrery/prod', 'OperatorActions'),
    ]);
  });

  it('takes its name from dashboardName', () => {
    const named = new OrreryStack(testApp(), 'Named', { platform: { dashboardName: 'orrery-prod' } });
    flatTemplate(named).hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: 'orrery-prod' });
  });
});

describe('tracing and metrics settings of the functions', () => {
  const ids = () => [
    logicalId(platform.api.handler),
    logicalId(platform.supervisor.handler),
    ...types.map((type) => logicalId(platform.jobTypes.get(type)?.worker.handler ?? platform)),
  ];

  it('every function writes metrics to the Orrery namespace, and has no SDK tracing by default', () => {
    for (const id of ids()) {
      const env = functionEnv(template, id);
      expect(env[ENV.metricsNamespace], id).toBe('Orrery');
      expect(env[ENV.tracing], id).toBeUndefined();
    }
  });

  it('tracing: true turns on the Tracer in every function (active tracing is on either way)', () => {
    const traced = new OrreryStack(testApp(), 'Traced', { platform: { tracing: true } });
    const t = flatTemplate(traced);
    for (const [id, fn] of Object.entries(resources(t, 'AWS::Lambda::Function'))) {
      expect(functionEnv(t, id)[ENV.tracing], id).toBe('true');
      expect(fn.Properties?.TracingConfig).toEqual({ Mode: 'Active' });
    }
  });

  it("gives each worker its queue's maxReceiveCount, to count what it dead-letters", () => {
    for (const type of types) {
      const resources = platform.jobTypes.get(type);
      const env = functionEnv(template, logicalId(resources?.worker.handler ?? platform));
      expect(env[ENV.maxReceiveCount]).toBe(String(resources?.queues.maxReceiveCount));
    }
  });
});

describe('cdk-nag with an alarm topic', () => {
  it('stays clean (AwsSolutions + Serverless) with a second platform whose alarms notify an encrypted, TLS-only topic', () => {
    const app = new App({ context: { ...SKIP_BUNDLING, ...ASSET_METADATA }, outdir: tempOutdir('nag-alarms') });
    const s = new OrreryStack(app, 'Orrery');
    const key = new Key(s, 'AlarmKey', { enableKeyRotation: true });
    const topic = new Topic(s, 'AlarmTopic', { masterKey: key, enforceSSL: true });
    const p = new JobPlatform(s, 'Second', {
      queueNamePrefix: 'Second',
      alarmTopic: topic,
      outputs: false,
      metricsNamespace: 'Orrery/second',
      scheduleGroupName: 'Orrery-second-jobs',
    });
    p.addJobType({ spec: echoJob, entry: 'functions/jobs/echo.ts' });
    const violations: PolicyViolation[] = [new AwsSolutionsChecks(), new ServerlessChecks()].flatMap(
      (pack) => pack.validateScope(app).violations,
    );
    expect(
      violations.flatMap((v) =>
        v.violatingResources.map((r) => `${v.ruleName} at ${r.constructPath ?? r.resourceLogicalId}`),
      ),
    ).toEqual([]);
    const t = flatTemplate(s);
    for (const name of p.alarms.alarms.keys()) {
      const a = alarm(name, t, p);
      expect(a.AlarmActions, name).toEqual([{ Ref: logicalId(topic) }]);
      expect(a.OKActions, name).toEqual([{ Ref: logicalId(topic) }]);
    }
  });
});
