// Worker threads do not inherit a loader registered with module.register()
// (bin/fsjob.js does that), and Node will not start a worker from a .ts file:
// register tsx here, then load the TypeScript worker. Registering twice (when
// the parent ran with --import tsx) is harmless.
import { register } from 'tsx/esm/api';

register();
await import('./scan-worker.ts');
