/**
 * The login machinery every door shares: a flow's id as the provider's state, and the provider's answer
 * turned into one of four outcomes, the assertion verified against the flow's nonce.
 */
import { AssertionError, type AssertionVerifier, type VerifiedAssertion } from '@pipeline/core/identity';
import { beginLogin, finishLogin, type IdentityProviderLogin } from '../src';

function provider(finish: IdentityProviderLogin['finish']): IdentityProviderLogin & { begun: unknown[] } {
  const begun: unknown[] = [];
  return {
    begun,
    begin: async (request) => {
      begun.push(request);
      return { location: `https://idp.example/authorize?state=${request.state}`, secret: 'verifier' };
    },
    finish,
  };
}

function verifier(outcome: () => Promise<VerifiedAssertion>): AssertionVerifier & { calls: unknown[][] } {
  const calls: unknown[][] = [];
  return {
    calls,
    verify: (...args) => {
      calls.push(args);
      return outcome();
    },
  };
}

const verified = async () => ({}) as VerifiedAssertion;

test('beginLogin: a fresh, unguessable flow id is the state the provider gets back', async () => {
  const login = provider(async () => undefined);
  const a = await beginLogin(login, { nonce: 'n1' });
  const b = await beginLogin(login, { nonce: 'n1' });
  expect(a.flowId).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(a.flowId).not.toBe(b.flowId);
  expect(a.location).toBe(`https://idp.example/authorize?state=${a.flowId}`);
  expect(a.secret).toBe('verifier');
  expect(login.begun[0]).toEqual({ state: a.flowId, nonce: 'n1' });
});

test('finishLogin: the assertion, verified against the flow nonce and options, is signed-in', async () => {
  const login = provider(async (answer, secret) => `token-for-${answer.code}-${secret}`);
  const check = verifier(verified);
  const options = { approval: { tbsData: 'x' } } as never;
  const outcome = await finishLogin(login, check, { code: 'c' }, { secret: 's', nonce: 'n', options });
  expect(outcome).toEqual({ kind: 'signed-in', assertion: 'token-for-c-s' });
  expect(check.calls).toEqual([['token-for-c-s', 'n', options]]);
});

test('finishLogin: no assertion is declined; a refused assertion refused; a failing provider unavailable', async () => {
  const check = verifier(verified);
  const flow = { secret: 's', nonce: 'n' };
  expect(
    await finishLogin(
      provider(async () => undefined),
      check,
      {},
      flow,
    ),
  ).toEqual({ kind: 'declined' });
  expect(check.calls).toEqual([]);

  const refusal = new AssertionError(
    'ASSERTION_BINDING_MISMATCH',
    'the assertion is not bound to this request',
  );
  const refused = await finishLogin(
    provider(async () => 't'),
    verifier(() => Promise.reject(refusal)),
    {},
    flow,
  );
  expect(refused).toEqual({ kind: 'refused', error: refusal });

  const down = new Error('token endpoint down');
  const unavailable = await finishLogin(
    provider(() => Promise.reject(down)),
    check,
    { code: 'c' },
    flow,
  );
  expect(unavailable).toEqual({ kind: 'unavailable', error: down });
});
