/**
 * fsjob: durable jobs handed from one program to another through a
 * directory (the protocol: spec/README.md). This entry point is the producer and the
 * consumer together; `fsjob/producer` and `fsjob/consumer` are each half,
 * `fsjob/validator` audits queues, `fsjob/schemas` is the record format alone.
 *
 *   import { openQueue, enqueue, waitFor, Worker } from 'fsjob';
 *
 *   const queue = await openQueue('/srv/q');
 *   const { id } = await enqueue(queue, { handler: 'resize', payload: { file: 'a.png' } });
 *   const worker = new Worker({ queues: ['/srv/q'], mode: 'drain' });
 *   worker.handle('resize', async ({ payload }) => resize(payload));
 *   await worker.run();
 *   const receipt = await waitFor(queue, id);    // receipt.outcome === 'succeeded'
 */
export * from './producer/index.ts';
export * from './consumer/index.ts';
