/**
 * SQS message groups (fair queues) on fauxqs 2.4.1, the local SQS: it accepts a `MessageGroupId`
 * on a standard-queue message and drops it (ReceiveMessage returns none). So this proves the
 * plumbing (the group is sent, and accepted), not fair delivery: see
 * test/support/message-group-scenario.ts and docs/flow-control.md ("SQS fair queues").
 */
import { inject } from 'vitest';
import { messageGroupScenario } from '../support/message-group-scenario';

messageGroupScenario({ dynamodbEndpoint: inject('dynamodbEndpoint') });
