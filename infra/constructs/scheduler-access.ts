import { Aws, Fn, Names, RemovalPolicy, Stack, Token } from 'aws-cdk-lib';
import { type IRole, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { ScheduleGroup } from 'aws-cdk-lib/aws-scheduler';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { acknowledge, resourceFinding } from './acknowledge';

/** Scheduler's limit on group names. */
const MAX_GROUP_NAME = 64;
const GROUP_NAME_PATTERN = /^[0-9a-zA-Z-_.]+$/;

export interface SchedulerAccessProps {
  /**
   * Name of the schedule group holding the one-time job schedules.
   * @default `${stackName}-jobs`, shortened with a unique suffix if over 64 characters
   */
  readonly scheduleGroupName?: string;
}

/**
 * Which Scheduler actions {@link SchedulerAccess.grantSchedules} allows: `create` (the API's
 * delayed jobs, the workers' long retries), `manage` (also delete and update: recurring
 * schedules; no get, their state is the job table's), `delete` (only delete: the supervisor
 * removes a schedule that never fired).
 */
export type ScheduleAccess = 'create' | 'manage' | 'delete';

/**
 * EventBridge Scheduler plumbing for delayed jobs and long retries: a schedule group, and the
 * execution role Scheduler assumes to deliver a due job to its ready queue. The role trusts
 * `scheduler.amazonaws.com` only for schedules of this group in this account (confused-deputy
 * guard) and may only `sqs:SendMessage` to the queues added with {@link allowSendTo}.
 * The group is deleted with the stack: its schedules would target the stack's deleted queues.
 *
 * @example
 * const scheduler = new SchedulerAccess(this, 'Scheduler');
 * scheduler.allowSendTo(readyQueue);
 * scheduler.grantSchedules(apiRole, 'manage');
 */
export class SchedulerAccess extends Construct {
  readonly group: ScheduleGroup;
  /** The role Scheduler assumes; its ARN is each schedule's `Target.RoleArn`. */
  readonly role: Role;
  /** ARN pattern matching every schedule in the group: `arn:…:schedule/<group>/*`. */
  readonly scheduleArns: string;
  private readonly sendStatement: PolicyStatement;

  constructor(scope: Construct, id: string, props: SchedulerAccessProps = {}) {
    super(scope, id);
    const stack = Stack.of(this);
    const scheduleGroupName = props.scheduleGroupName ?? defaultGroupName(this, stack.stackName);
    const invalid = !GROUP_NAME_PATTERN.test(scheduleGroupName) || scheduleGroupName.length > MAX_GROUP_NAME;
    if (!Token.isUnresolved(scheduleGroupName) && invalid) {
      throw new Error(
        `scheduleGroupName "${scheduleGroupName}" must be 1-${MAX_GROUP_NAME} characters of letters, digits, - _ .`,
      );
    }
    this.group = new ScheduleGroup(this, 'Group', { scheduleGroupName, removalPolicy: RemovalPolicy.DESTROY });
    this.role = new Role(this, 'Role', {
      description: 'Assumed by EventBridge Scheduler to send due Orrery jobs to their ready queues',
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com').withConditions({
        StringEquals: { 'aws:SourceAccount': stack.account },
        ArnEquals: { 'aws:SourceArn': this.group.scheduleGroupArn },
      }),
    });
    this.sendStatement = new PolicyStatement({ actions: ['sqs:SendMessage'] });
    // The name as given (not the group's Ref) when it is known at synthesis: a grant in another
    // stack (a job type's nested stack) then needs no cross-stack reference.
    const groupName = Token.isUnresolved(scheduleGroupName) ? this.group.scheduleGroupName : scheduleGroupName;
    // Unscoped pseudo parameters (Aws.*): the same value in any stack, so no reference either.
    this.scheduleArns = Fn.join('', [
      'arn:',
      Aws.PARTITION,
      ':scheduler:',
      Aws.REGION,
      ':',
      Aws.ACCOUNT_ID,
      `:schedule/${groupName}/*`,
    ]);
  }

  /** Lets Scheduler deliver to `queue`, or to every queue an ARN pattern matches. */
  allowSendTo(queue: IQueue | string): void {
    const first = this.sendStatement.resources.length === 0;
    this.sendStatement.addResources(typeof queue === 'string' ? queue : queue.queueArn);
    if (first) this.role.addToPrincipalPolicy(this.sendStatement);
    if (typeof queue === 'string') {
      acknowledge(
        this.role,
        `AwsSolutions-IAM5[${resourceFinding(this, queue)}]`,
        "The platform's ready queues, named <prefix>_ready_<type>: Scheduler delivers due jobs of any type, and " +
          'the pattern matches exactly those queues, in one line whatever the number of types.',
      );
    }
  }

  /**
   * Lets `role` create (and for `manage` also delete and update: recurring schedules are
   * paused, resumed and changed in place) schedules in this group, and pass
   * the Scheduler role, to Scheduler only. Acknowledges the one wildcard this needs.
   */
  grantSchedules(role: IRole, access: ScheduleAccess): void {
    const actions =
      access === 'delete'
        ? ['scheduler:DeleteSchedule']
        : access === 'manage'
          ? ['scheduler:CreateSchedule', 'scheduler:DeleteSchedule', 'scheduler:UpdateSchedule']
          : ['scheduler:CreateSchedule'];
    role.addToPrincipalPolicy(new PolicyStatement({ actions, resources: [this.scheduleArns] }));
    // Only a role that creates or updates schedules passes the Scheduler role to them.
    if (access !== 'delete') this.allowPassRole(role);
    acknowledge(
      role,
      `AwsSolutions-IAM5[${resourceFinding(this, this.scheduleArns)}]`,
      'Schedules are created at run time, one per delayed job (named by job id) and one per recurring ' +
        'schedule (_s.<name>), so their ARNs are unknown at deploy time; the wildcard is confined to ' +
        'schedules of this one schedule group.',
    );
  }

  private allowPassRole(role: IRole): void {
    role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['iam:PassRole'],
        resources: [this.role.roleArn],
        conditions: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
      }),
    );
  }
}

function defaultGroupName(scope: Construct, stackName: string): string {
  const name = `${stackName}-jobs`;
  return name.length <= MAX_GROUP_NAME ? name : Names.uniqueResourceName(scope, { maxLength: MAX_GROUP_NAME });
}
