/**
 * vitest `setupFiles` of the `deployed` project: in each test worker, AWS hostnames lead to the
 * harness (see aws-network.mjs), so the e2e suite's own SDK clients reach the stack's queues by
 * the AWS-form URLs the stack outputs, as they would on AWS.
 */
import { routeAwsTo } from './aws-network.mjs';

const route = process.env.ORRERY_DEPLOYED_AWS_ROUTE;
if (!route)
  throw new Error('ORRERY_DEPLOYED_AWS_ROUTE is not set: run through the deployed project (npm run test:deployed)');
routeAwsTo(route);
