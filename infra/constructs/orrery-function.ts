import { Duration } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { LogLevel, NodejsFunction, type NodejsFunctionProps, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { type ILogGroup, LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { ENV } from '../../shared/config';
import { bundlingProject, fromRepoRoot } from '../paths';
import { acknowledge, XRAY_WILDCARD_REASON } from './acknowledge';
import { checkEnvironmentSize } from './lambda-environment';

/**
 * Lets CommonJS code inside the ESM bundle call `require()` for Node built-ins; without it
 * esbuild's shim throws "Dynamic require of ... is not supported" at run time. Today's bundles
 * need no such call; this keeps a CommonJS dependency added later from failing in Lambda.
 */
const ESM_REQUIRE_BANNER =
  "import { createRequire as __orreryCreateRequire } from 'node:module'; " +
  'const require = __orreryCreateRequire(import.meta.url);';

/**
 * The Powertools Tracer, with the X-Ray SDK it loads (about 120 KB minified), is left out of the
 * bundle of a function whose environment does not turn tracing on (`ORRERY_TRACING`): it is only
 * imported when tracing is on, and parsing it would slow every cold start (see docs/observability.md).
 */
export const TRACER_MODULE = '@aws-lambda-powertools/tracer';

export interface OrreryFunctionProps extends Omit<NodejsFunctionProps, 'role' | 'logRetention' | 'logGroup'> {
  /**
   * Handler file: absolute, or relative to the repository root (from the installed package: to
   * the working directory). Must export `handler`.
   */
  readonly entry: string;
  /**
   * Log group to write to; the execution role gets write access to it.
   * @default a new log group with `logGroupRetention`
   */
  readonly logGroup?: ILogGroup;
  /**
   * Retention of the function's log group (created with the function).
   * @default RetentionDays.ONE_MONTH
   */
  readonly logGroupRetention?: RetentionDays;
}

/**
 * A NodejsFunction with Orrery's house defaults: Node.js 24 on arm64, an ESM bundle built by
 * the local esbuild (Docker is never used) with our pinned AWS SDK inside, minified with source
 * maps, active X-Ray tracing (the Powertools Tracer bundled only when `ORRERY_TRACING` is on), and
 * its own log group with a one-month retention. The execution
 * role is created here with an inline policy (logs to its own group only) instead of the
 * `AWSLambdaBasicExecutionRole` managed policy, which would allow writing to any log group.
 * Its environment is checked against Lambda's 4 KB quota at synthesis (see
 * {@link checkEnvironmentSize}: values resolved only at deploy time are estimated).
 *
 * @example
 * const fn = new OrreryFunction(this, 'Api', {
 *   entry: 'functions/api.ts',
 *   timeout: Duration.seconds(15),
 *   environment: { ORRERY_TABLE: table.tableName },
 * });
 */
export class OrreryFunction extends NodejsFunction {
  /** The execution role; grant to it, or acknowledge findings on it. */
  readonly executionRole: Role;

  constructor(scope: Construct, id: string, props: OrreryFunctionProps) {
    const { logGroupRetention, logGroup: givenLogGroup, bundling, environment, ...functionProps } = props;
    const variables = { NODE_OPTIONS: '--enable-source-maps', ...environment };
    checkEnvironmentSize(props.description ?? id, variables);
    // Created beside the function (not inside it): a subclass cannot add children before super().
    const logGroup =
      givenLogGroup ?? new LogGroup(scope, `${id}Logs`, { retention: logGroupRetention ?? RetentionDays.ONE_MONTH });
    const role = new Role(scope, `${id}Role`, {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role: ${props.description ?? id}`,
    });
    super(scope, id, {
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: 512,
      timeout: Duration.seconds(30),
      tracing: Tracing.ACTIVE,
      ...functionProps,
      entry: fromRepoRoot(props.entry),
      ...bundlingProject(),
      role,
      logGroup,
      environment: variables,
      bundling: {
        format: OutputFormat.ESM,
        mainFields: ['module', 'main'],
        banner: ESM_REQUIRE_BANNER,
        minify: true,
        sourceMap: true,
        sourcesContent: false,
        bundleAwsSDK: true,
        forceDockerBundling: false,
        externalModules: environment?.[ENV.tracing] === 'true' ? [] : [TRACER_MODULE],
        logLevel: LogLevel.WARNING,
        ...bundling,
      },
    });
    this.executionRole = role;
    logGroup.grantWrite(role);
    if (props.tracing !== Tracing.DISABLED) {
      acknowledge(role, 'AwsSolutions-IAM5[Resource::*]', XRAY_WILDCARD_REASON);
    }
  }
}
