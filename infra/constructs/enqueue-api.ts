import { Duration, Lazy, Stack } from 'aws-cdk-lib';
import { type Grant, type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { type FunctionUrl, FunctionUrlAuthType } from 'aws-cdk-lib/aws-lambda';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ENV, type Route } from '../../shared/config';
import { FROM_SOURCES, platformEntry } from '../paths';
import { acknowledge } from './acknowledge';
import type { JobTable } from './job-table';
import { OrreryFunction } from './orrery-function';
import type { SchedulerAccess } from './scheduler-access';

/** Item and query actions the API needs; no Scan, no table management. */
const API_TABLE_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:BatchGetItem',
  'dynamodb:Query',
  'dynamodb:ConditionCheckItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
];

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
  /** Variables every Orrery function gets (table, schedule group, role, retention, log level). */
  readonly environment: Record<string, string>;
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
 * {@link grantInvoke}). It reads and writes job items and queries the GSIs, sends to the ready
 * queues added with {@link addRoute}, and manages one-time schedules in the platform's group.
 *
 * `ORRERY_ROUTES` is computed at synthesis, so routes added after construction are included.
 *
 * @example
 * const api = new EnqueueApi(this, 'Api', { jobTable, scheduler, environment });
 * api.addRoute('send-email', emailQueue);
 * api.grantInvoke(backendRole);
 */
export class EnqueueApi extends Construct {
  readonly handler: OrreryFunction;
  /** The HTTPS endpoint (`url.url`). */
  readonly url: FunctionUrl;
  private readonly routes = new Map<string, IQueue>();
  private readonly deadLetterQueues = new Map<string, IQueue>();
  private readonly sendStatement = new PolicyStatement({ actions: ['sqs:SendMessage'] });
  /** Peek and redrive (`GET /dlq`, `POST /dlq/redrive`); no SendMessage on a DLQ. */
  private readonly dlqStatement = new PolicyStatement({ actions: API_DLQ_ACTIONS });

  constructor(scope: Construct, id: string, props: EnqueueApiProps) {
    super(scope, id);
    const routes = Lazy.string({ produce: () => Stack.of(this).toJsonString(this.routeConfig()) });
    this.handler = new OrreryFunction(this, 'Handler', {
      entry: props.entry ?? defaultApiEntry(),
      description: 'Orrery enqueue API (Function URL, AWS_IAM auth)',
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout ?? Duration.seconds(10),
      logGroupRetention: props.logGroupRetention,
      environment: { ...props.environment, [ENV.routes]: routes },
    });
    this.url = this.handler.addFunctionUrl({ authType: FunctionUrlAuthType.AWS_IAM });

    const table = props.jobTable.table;
    const indexArns = props.jobTable.indexNames.map((name) => `${table.tableArn}/index/${name}`);
    this.handler.addToRolePolicy(
      new PolicyStatement({ actions: API_TABLE_ACTIONS, resources: [table.tableArn, ...indexArns] }),
    );
    props.scheduler.grantSchedules(this.handler.executionRole, 'manage');
    acknowledge(
      this.handler,
      'Serverless-LambdaDLQ',
      'The enqueue API is only invoked synchronously through its Function URL: every error is returned ' +
        'to the HTTP caller in the response. A Lambda DLQ only catches failed asynchronous invocations, ' +
        'which this function never receives.',
    );
  }

  /**
   * Makes jobs of `type` enqueueable: adds the route to `ORRERY_ROUTES` and allows SendMessage.
   * With its `deadLetterQueue`, the API may also peek at and redrive that DLQ.
   */
  addRoute(type: string, queue: IQueue, deadLetterQueue?: IQueue): void {
    if (this.routes.has(type)) throw new Error(`EnqueueApi: route for job type "${type}" exists already`);
    this.routes.set(type, queue);
    const first = this.sendStatement.resources.length === 0;
    this.sendStatement.addResources(queue.queueArn);
    if (first) this.handler.addToRolePolicy(this.sendStatement);
    if (deadLetterQueue) {
      this.deadLetterQueues.set(type, deadLetterQueue);
      const firstDlq = this.dlqStatement.resources.length === 0;
      this.dlqStatement.addResources(deadLetterQueue.queueArn);
      if (firstDlq) this.handler.addToRolePolicy(this.dlqStatement);
    }
  }

  /** Lets `grantee` call the API (`lambda:InvokeFunctionUrl`, plus the InvokeFunction it implies). */
  grantInvoke(grantee: IGrantable): Grant {
    return this.handler.grantInvokeUrl(grantee);
  }

  private routeConfig(): Record<string, Route> {
    const config: Record<string, Route> = {};
    for (const [type, queue] of this.routes) {
      const dlq = this.deadLetterQueues.get(type);
      config[type] = {
        queueUrl: queue.queueUrl,
        queueArn: queue.queueArn,
        ...(dlq ? { dlqUrl: dlq.queueUrl, dlqArn: dlq.queueArn } : {}),
      };
    }
    return config;
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
