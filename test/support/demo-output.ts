import { expect } from 'vitest';

/**
 * What `plan-ledger demo` prints about its kill and replay: the executor that called the payment service
 * was SIGKILLed during the call, and the other one repeated the call with the same key and got the
 * original refund back. Returns who was who, for the assertions that follow.
 */
export function expectKillAndReplay(stdout: string): { victim: string; survivor: string } {
  const call = /(executor-[AB]) \(pid (\d+)\) calls POST \/refunds, key …\/refund-payment\/1: refund performed/.exec(stdout);
  expect(call).not.toBeNull();
  const [, victim, pid] = call!;
  expect(stdout).toContain(`SIGKILL          ${victim} (pid ${pid}) while its payment call is in flight`);
  const survivor = victim === 'executor-A' ? 'executor-B' : 'executor-A';
  expect(stdout).toMatch(new RegExp(`${survivor} \\(pid \\d+\\) calls POST /refunds, key …/refund-payment/1: key seen before`));
  return { victim: victim!, survivor };
}
