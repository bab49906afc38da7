/**
 * SQS message groups (fair queues) on moto server 5.2.1: it accepts a `MessageGroupId` on a
 * standard-queue message, keeps it and returns it on a ReceiveMessage that asks for it, without
 * reordering by group. So this proves the group reaches SQS as sent, not fair delivery: see
 * test/support/message-group-scenario.ts and docs/flow-control.md ("SQS fair queues").
 */
import { messageGroupScenario } from '../support/message-group-scenario';

messageGroupScenario();
