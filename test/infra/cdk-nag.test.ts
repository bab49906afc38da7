import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, type PolicyViolation, Stack, Validations } from 'aws-cdk-lib';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks, type NagPack, ServerlessChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { OrreryStack } from '../../infra/stack';
import { ASSET_METADATA, SKIP_BUNDLING, tempOutdir } from './support';

/** The real stack, in an app with both rule packs registered the way infra/app.ts does. */
function nagApp(): App {
  const app = new App({ context: { ...SKIP_BUNDLING, ...ASSET_METADATA }, outdir: tempOutdir('nag') });
  new OrreryStack(app, 'Orrery');
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
  return app;
}

const packs = (): NagPack[] => [new AwsSolutionsChecks(), new ServerlessChecks()];

/** One line per finding: `rule (severity) at path`, easy to read in a failure diff. */
function describeViolations(violations: PolicyViolation[]): string[] {
  return violations.flatMap((v) =>
    v.violatingResources.map(
      (r) => `${v.ruleName} (${v.severity ?? 'error'}) at ${r.constructPath ?? r.resourceLogicalId}`,
    ),
  );
}

interface Acknowledgement {
  path: string;
  id: string;
  reason: string;
}

function acknowledgements(root: IConstruct): Acknowledgement[] {
  return root.node.findAll().flatMap((construct) =>
    construct.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) =>
        Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({
          path: construct.node.path,
          id: id.replace(/^annotation::/i, ''),
          reason,
        })),
      ),
  );
}

describe('cdk-nag (AwsSolutions + Serverless)', () => {
  it('synthesizes with zero unacknowledged findings, errors and warnings alike', () => {
    const app = nagApp();
    // cdk-nag 3 fails synthesis on any finding (warnings included) and writes the CDK report.
    const assembly = app.synth();
    const report = JSON.parse(readFileSync(join(assembly.directory, 'validation-report.json'), 'utf8')) as {
      pluginReports: { pluginName?: string; violations?: PolicyViolation[] }[];
    };
    expect(report.pluginReports.flatMap((r) => describeViolations(r.violations ?? []))).toEqual([]);
  });

  it('reports nothing when each pack checks the construct tree directly', () => {
    const app = nagApp();
    for (const pack of packs()) {
      const result = pack.validateScope(app);
      expect(describeViolations(result.violations), pack.readPackName).toEqual([]);
      expect(result.success).toBe(true);
    }
  });

  it('acknowledges only findings that exist, on the constructs that produce them, with specific reasons', () => {
    const app = nagApp();
    // Raw findings: the same packs with acknowledgements ignored.
    const raw = packs().flatMap((pack) => {
      Reflect.set(pack, 'isAcknowledged', () => false);
      return pack.validateScope(app).violations;
    });
    const acks = acknowledgements(app);
    expect(acks.length).toBeGreaterThan(0);
    for (const ack of acks) {
      const matching = raw
        .filter((v) => v.ruleName === ack.id)
        .flatMap((v) => v.violatingResources.map((r) => r.constructPath ?? ''))
        .filter((path) => path === ack.path || path.startsWith(`${ack.path}/`));
      expect(matching, `stale acknowledgement ${ack.id} at ${ack.path}`).not.toEqual([]);
      expect(ack.reason.length, `${ack.id} reason`).toBeGreaterThanOrEqual(80);
    }
    // Reasons are written per finding: two different rules never share a reason text.
    const ruleByReason = new Map<string, string>();
    for (const ack of acks) {
      expect(ruleByReason.get(ack.reason) ?? ack.id, ack.reason).toBe(ack.id);
      ruleByReason.set(ack.reason, ack.id);
    }
  });

  it('fixes rather than acknowledges: IAM4, SQS3/SQS4, DDB3, L1, tracing, memory, timeout and log retention', () => {
    const acks = acknowledgements(nagApp());
    const acknowledged = new Set(acks.map((a) => a.id.replace(/\[.*$/, '')));
    for (const fixed of [
      'AwsSolutions-IAM4',
      'AwsSolutions-SQS3',
      'AwsSolutions-SQS4',
      'AwsSolutions-DDB3',
      'AwsSolutions-L1',
      'Serverless-LambdaTracing',
      'Serverless-CloudWatchLogGroupRetentionPeriod',
      'Serverless-LambdaLatestVersion',
      'Serverless-LambdaDefaultMemorySize',
      'Serverless-LambdaDefaultTimeout',
      'Serverless-LambdaStarPermissions',
    ]) {
      expect(acknowledged, fixed).not.toContain(fixed);
    }
    // Only dead-letter queues, which end the redrive chain, go without a redrive policy.
    for (const ack of acks.filter((a) => a.id === 'Serverless-SQSRedrivePolicy')) {
      expect(ack.path).toMatch(/\/Queues\/DeadLetterQueue$/);
    }
  });

  it('does fail synthesis on an unacknowledged finding (the check above can fail)', () => {
    const app = new App({ outdir: tempOutdir('nag') });
    const stack = new Stack(app, 'Bad');
    new Queue(stack, 'PlainQueue');
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
    expect(() => app.synth()).toThrow(/AwsSolutions-SQS4/);
  });
});
