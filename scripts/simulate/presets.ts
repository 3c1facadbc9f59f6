import type { HsmTimings } from './types';

/**
 * HSM timing presets. Luna and SoftHSM are measured figures; CloudHSM's keygen and unwrap rates are not
 * published, so those are assumptions to override with --keygen-ms, --unwrap-ms, ... once measured.
 */
export const HSM_PRESETS: Readonly<Record<string, HsmTimings>> = {
  luna: {
    name: 'luna',
    keygenMs: 673,
    unwrapMs: 70,
    signMs: 20,
    dbLoadMs: 1,
    wrapSaveMs: 130,
    // The study ran 4 client threads; the Luna SA signs ~1,200/s at 20 ms each, i.e. well over 8
    // operations in parallel. 8 is a conservative per-client figure; --sessions changes it.
    sessionsPerHsm: 8,
    source: 'study (SafeNet Luna SA 1700): keygen 673 ms, unwrap 70, sign 20, DB load ~1, wrap+save ~130',
  },
  cloudhsm: {
    name: 'cloudhsm',
    keygenMs: 500,
    unwrapMs: 10,
    signMs: 8,
    dbLoadMs: 8,
    wrapSaveMs: 25,
    // AWS: ~2,000 RSA-2048 signs/s on 2 HSMs = 1,000/s per HSM = 8 parallel sessions at 8 ms.
    sessionsPerHsm: 8,
    source:
      'ASSUMED: sign 8 ms x 8 sessions = AWS ~1,000 RSA-2048 signs/s per HSM; keygen 500 ms, unwrap 10 ms ' +
      '(not published, measure and override); DynamoDB claim ~8 ms, wrap+put ~25 ms',
  },
  softhsm: {
    name: 'softhsm',
    keygenMs: 258,
    unwrapMs: 2.24,
    signMs: 2.52,
    dbLoadMs: 2,
    wrapSaveMs: 5,
    // SoftHSM is CPU-bound: one operation per core of this 2-core machine.
    sessionsPerHsm: 2,
    source:
      'npm run bench -- hsm on this 2-core machine (medians): RSA-2048 keygen 258 ms, unwrap 2.24, sign 2.52, ' +
      'wrap 0.79; DB load ~2 ms and wrap+save ~5 ms assumed for DynamoDB Local',
  },
};

/** Per-request service time with a pooled key, and without (on-the-fly keygen). */
export const pooledServiceMs = (t: HsmTimings): number => t.dbLoadMs + t.unwrapMs + t.signMs;
export const onTheFlyServiceMs = (t: HsmTimings): number => t.keygenMs + t.signMs;
/** One pool keygen job on one session: generate, wrap, save. */
export const keygenJobMs = (t: HsmTimings): number => t.keygenMs + t.wrapSaveMs;
