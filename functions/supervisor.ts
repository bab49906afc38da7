import { createSupervisorHandler } from '../shared/supervisor/lambda';

/** The supervisor: one pass over the due index per invocation (every minute, from an EventBridge rule). */
export const handler = createSupervisorHandler();
