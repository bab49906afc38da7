/** Moved to test/local-aws/memory-schedules.ts, where the testing kit's in-memory mode ships it; re-exported for the tests. */
export * from '../local-aws/memory-schedules';
