/**
 * The `csc` suite's load generator in a process of its own (its CPU apart from the service's): the
 * parent sends the flow, the target and the schedule; the worker says `ready`, waits for `go` (the
 * parent takes its first readings in between), starts one flow per arrival whatever the answers (open
 * loop), sends back the outcomes and exits when told.
 */
import { runFlow, type FlowKind, type FlowOutcome, type FlowTarget } from './csc-flows';

type Job = { kind: FlowKind; target: FlowTarget; count: number; rate: number; first: number };

process.once('message', (job: Job) => {
  process.once('message', () => {
    void (async () => {
      const start = performance.now();
      const pending: Array<Promise<FlowOutcome>> = [];
      for (let i = 0; i < job.count; i++) {
        const wait = (i * 1000) / job.rate - (performance.now() - start);
        if (wait > 1) await new Promise((r) => setTimeout(r, wait));
        pending.push(runFlow(job.kind, job.target, job.first + i));
      }
      const outcomes = await Promise.all(pending);
      process.once('message', () => process.exit(0));
      process.send!({ outcomes, seconds: (performance.now() - start) / 1000 });
    })();
  });
  process.send!({ ready: true });
});
