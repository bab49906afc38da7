/** Moved to test/local-aws/memory-control.ts, where the testing kit's in-memory mode ships it; re-exported for the tests. */
export * from '../local-aws/memory-control';
