// A thread of the worker pool (src/offload) when the service runs from its TypeScript sources, as emergency-api.js does
// for a checkout edited since its last build: the thread loads the tsx loader itself, since the main thread's does not
// reach worker threads. A build runs dist/offload/worker.js instead and never needs this development dependency.
import { register } from 'tsx/esm/api';

register();
const { default: runTask } = await import('../src/offload/worker.ts');

export default runTask;
