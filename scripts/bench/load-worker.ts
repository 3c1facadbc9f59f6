/**
 * The open-loop load generator in a process of its own, so that its CPU is measured apart from the
 * service's. The parent sends the arrivals and target; the worker makes the logins, says `ready`, waits
 * for `go` (the parent starts its measurements in between), sends back the outcomes and exits when the
 * parent has taken its last readings.
 */
import { runOpenLoop, type Arrival, type LoadOptions } from './load';

type Job = { arrivals: Arrival[]; options: Omit<LoadOptions, 'onStart'> };

process.once('message', (job: Job) => {
  void runOpenLoop(job.arrivals, {
    ...job.options,
    onStart: () =>
      new Promise<void>((resolve) => {
        process.once('message', () => resolve());
        process.send!({ ready: true });
      }),
  }).then(
    // Stays alive until told, so the parent's last CPU reading still finds this process.
    (outcomes) => {
      process.once('message', () => process.exit(0));
      process.send!({ outcomes });
    },
    (err: unknown) => process.send!({ error: (err as Error).message ?? String(err) }, () => process.exit(1)),
  );
});
