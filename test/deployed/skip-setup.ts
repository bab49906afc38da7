/**
 * vitest `setupFiles` of the `deployed` project: skips the tests listed in skips.ts, with their
 * reason as the skip note.
 */
import { beforeEach } from 'vitest';
import { DEPLOYED_SKIPS } from './skips';

beforeEach((context) => {
  const skip = DEPLOYED_SKIPS.find((s) => s.test === context.task.fullName);
  if (skip) context.skip(`skipped on the deployed moto target: ${skip.reason}`);
});
