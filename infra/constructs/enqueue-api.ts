import { Duration, Lazy } from 'aws-cdk-lib';
import { type Grant, type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { type CfnFunction, type FunctionUrl, FunctionUrlAuthType } from 'aws-cdk-lib/aws-lambda';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { ENV, typesDigest } from '../../shared/config';
import { JOB_TABLE } from '../../shared/core/table';
import { FROM_SOURCES, platformEntry } from '../paths';
import { acknowledge, resourceFinding } from './acknowledge';
import type { ApiGrants } from './api-grants';
import type { JobTable } from './job-table';
import { OrreryFunction } from './orrery-function';
import type { QueueNaming } from './queue-naming';
import type { SchedulerAccess } from './scheduler-access';

const API_DESCRIPTION = 'Orrery enqueue API (Function URL, AWS_IAM auth)';

/**
 * Item actions the API needs, on the table; no Scan, no table management. (DeleteItem: a
 * schedule's items go in a transaction; no transaction has a ConditionCheck item.)
 */
const API_TABLE_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:BatchGetItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
];

/** The indexes the API queries (the listings, and the schedules' on `byType`); the due index is the supervisor's. */
export const API_QUERY_INDEXES = JOB_TABLE.indexes
  .filter((index) => index.partitionKey !== 'dueBucket')
  .map((index) => index.name);

/**
 * What the API does with a job type's DLQ: peek (receive with visibility 0), count (`GET /dlq`,
 * and `GET /overview`'s `dlqDepth`), and redrive,
 * by an SQS message move task (which also needs SendMessage on the ready queue, granted by
 * addRoute) or, where that is missing, by receive + send + delete.
 */
const API_DLQ_ACTIONS = [
  'sqs:ReceiveMessage',
  'sqs:DeleteMessage',
  'sqs:GetQueueAttributes',
  'sqs:StartMessageMoveTask',
  'sqs:ListMessageMoveTasks',
];

export interface EnqueueApiProps {
  readonly jobTable: JobTable;
  readonly scheduler: SchedulerAccess;
  /** How the platform names its queues: the API sends to its ready queues and manages its DLQs by these names. */
  readonly naming: QueueNaming;
  /** Variables every Orrery function gets (table, schedule group, role, retention, log level). */
  readonly environment: Record<string, string>;
  /** Who may do what: the API reads the parameter it names (`ORRERY_GRANTS_PARAMETER`) at cold start. */
  readonly grants: ApiGrants;
  /**
   * Handler file, absolute or relative to the repository root (from the installed package: to
   * the working directory). It exports `handler = createLambdaApiHandler(catalog)`, the API
   * built with the specs of the job types it accepts.
   * @default 'functions/api.ts' (the example catalog) in this repository; required from the package
   */
  readonly entry?: string;
  /** @default 512 */
  readonly memorySize?: number;
  /** @default Duration.seconds(10) */
  readonly timeout?: Duration;
  /** @default RetentionDays.ONE_MONTH */
  readonly logGroupRetention?: RetentionDays;
}

/**
 * The enqueue API: a Lambda behind a Function URL with `AWS_IAM` auth, so AWS rejects every
 * request that is not SigV4-signed by a principal holding `lambda:InvokeFunctionUrl` (see
 * {@link grantInvoke}). It reads and writes job items and queries the listing GSIs, sends to the ready
 * ready queues and peeks at and redrives the DLQs of the platform's queue naming (IAM patterns
 * `<prefix>_ready_*` and `<prefix>_dlq_*`: constant in size whatever the number of types), and
 * manages one-time schedules in the platform's group. It reads the grants (who may do what) from
 * one SSM parameter ({@link ApiGrants}), named by `ORRERY_GRANTS_PARAMETER`.
 *
 * Its environment holds no route per type: the types are its catalog's, checked at cold start
 * against `ORRERY_TYPES_DIGEST`, the digest of the types added with {@link addRoute}.
 *
 * @example
 * const api = new EnqueueApi(this, 'Api', { jobTable, scheduler, naming, environment, grants });
 * api.addRoute('send-email', emailQueue);
 * api.grantInvoke(backendRole);
 */
export class EnqueueApi extends Construct {
  readonly handler: OrreryFunction;
  /** The HTTPS endpoint (`url.url`). */
  readonly url: FunctionUrl;
  private readonly types = new Set<string>();

  constructor(scope: Construct, id: string, props: EnqueueApiProps) {
    super(scope, id);
    const digest = Lazy.string({ produce: () => typesDigest([...this.types]) });
    this.handler = new OrreryFunction(this, 'Handler', {
      entry: props.entry ?? defaultApiEntry(),
      description: API_DESCRIPTION,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout ?? Duration.seconds(10),
      logGroupRetention: props.logGroupRetention,
      environment: {
        ...props.environment,
        [ENV.typesDigest]: digest,
        [ENV.grantsParameter]: props.grants.parameterName,
      },
    });
    this.url = this.handler.addFunctionUrl({ authType: FunctionUrlAuthType.AWS_IAM });
    // The API reads the grants once per container: a deploy that changes them changes the
    // function's configuration too (its description), so Lambda moves the next calls to new
    // containers, which read the new grants. No second environment variable for it.
    (this.handler.node.defaultChild as CfnFunction).description = Lazy.string({
      produce: () => `${API_DESCRIPTION}; grants ${props.grants.digest}`,
    });

    const table = props.jobTable.table;
    const indexArns = API_QUERY_INDEXES.map((name) => `${table.tableArn}/index/${name}`);
    this.handler.addToRolePolicy(new PolicyStatement({ actions: API_TABLE_ACTIONS, resources: [table.tableArn] }));
    this.handler.addToRolePolicy(new PolicyStatement({ actions: ['dynamodb:Query'], resources: indexArns }));
    // A slot's ranked line (`flowq#…`), and nothing else of the table: a limit raised at run time
    // admits the line's head (shared/api/key-limits-service.ts), and GET /types/{type}/keys/{key}
    // lists the line. And a match key's partition (`evmatch#…`): POST /events reads the waits of
    // an event that declares `matchOn` (shared/api/events-service.ts). And a job's journal
    // (`job#<id>#<incarnation>[.<series>]#journal`): POST /jobs/{id}/rerun reads the entries it cuts
    this.handler.addToRolePolicy(
      new PolicyStatement({
        actions: ['dynamodb:Query'],
        resources: [table.tableArn],
        conditions: {
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['flowq#*', 'evmatch#*', 'job#*#journal'] },
        },
      }),
    );
    props.scheduler.grantSchedules(this.handler.executionRole, 'manage');
    props.grants.allowRead(this.handler);
    this.handler.addToRolePolicy(
      new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [props.naming.readyQueueArns] }),
    );
    // Peek and redrive (`GET /dlq`, `POST /dlq/redrive`); no SendMessage on a DLQ.
    this.handler.addToRolePolicy(
      new PolicyStatement({ actions: API_DLQ_ACTIONS, resources: [props.naming.deadLetterQueueArns] }),
    );
    acknowledge(
      this.handler.executionRole,
      `AwsSolutions-IAM5[${resourceFinding(this, props.naming.readyQueueArns)}]`,
      "The platform's ready queues, named <prefix>_ready_<type>: the pattern matches exactly them (no DLQ, no " +
        "other platform's queue) and stays one line whatever the number of job types.",
    );
    acknowledge(
      this.handler.executionRole,
      `AwsSolutions-IAM5[${resourceFinding(this, props.naming.deadLetterQueueArns)}]`,
      "The platform's dead-letter queues, named <prefix>_dlq_<type>: the pattern matches exactly them and stays " +
        'one line whatever the number of job types.',
    );
    // Only when the catalog it was built with differs from the deployed types (ORRERY_TYPES_DIGEST):
    // it lists the ready queues once to serve only the deployed ones (deployedConfig).
    this.handler.addToRolePolicy(new PolicyStatement({ actions: ['sqs:ListQueues'], resources: ['*'] }));
    acknowledge(
      this.handler.executionRole,
      'AwsSolutions-IAM5[Resource::*]',
      "sqs:ListQueues has no resource-level permission (IAM grants it per Region). The API lists the platform's " +
        'ready queues by name prefix only when its catalog differs from the deployed job types, to serve just the ' +
        "deployed ones. The same role's X-Ray statement also needs *.",
    );
    acknowledge(
      this.handler,
      'Serverless-LambdaDLQ',
      'The enqueue API is only invoked synchronously through its Function URL: every error is returned ' +
        'to the HTTP caller in the response. A Lambda DLQ only catches failed asynchronous invocations, ' +
        'which this function never receives.',
    );
  }

  /**
   * Counts `type` among the deployed types (`ORRERY_TYPES_DIGEST`). Its queues need no grant of
   * their own: the API's statements cover every queue of the platform's naming.
   */
  addRoute(type: string): void {
    if (this.types.has(type)) throw new Error(`EnqueueApi: route for job type "${type}" exists already`);
    this.types.add(type);
  }

  /** Lets `grantee` call the API (`lambda:InvokeFunctionUrl`, plus the InvokeFunction it implies). */
  grantInvoke(grantee: IGrantable): Grant {
    return this.handler.grantInvokeUrl(grantee);
  }
}

/** The repository's API entry (the example job types); the package ships none, so the app names its own. */
function defaultApiEntry(): string {
  if (FROM_SOURCES) return platformEntry('api');
  throw new Error(
    'JobPlatform: apiEntry is required: a file of your app that exports ' +
      "`handler = createLambdaApiHandler(catalog)` (from 'orrery-jobs/runtime') with the specs of your job types",
  );
}
