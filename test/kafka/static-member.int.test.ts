// Static group membership (GroupMemberOptions.instanceId, Kafka's group.instance.id), which executors use:
// a member that closes leaves the group at once, as a dynamic one does (librdkafka sends no LeaveGroup for a
// static member on close, so the port unsubscribes first), and a second member under the same id fences the
// first, which then gives its partitions up as lost and says why. A cooperative revocation hands the
// partitions to the next member once the revoking member's handler has finished, within its wait.
import { describe, expect, it } from 'vitest';
import { ensureTopics, type GroupMember, type KafkaClient } from '../../src/kafka/index.js';
import { closeAfter, randomGroupId, randomPrefix, testAdmin, testKafka, waitFor } from '../support/helpers.js';

async function newTopic(kafka: KafkaClient, partitions: number): Promise<string> {
  const admin = await testAdmin(kafka);
  const topic = randomPrefix('static');
  await ensureTopics(admin, [{ topic, numPartitions: partitions, replicationFactor: -1 }]);
  admin.track(topic);
  return topic;
}

interface Watched {
  member: GroupMember;
  owned: Set<number>;
  revocations: Array<{ partitions: number[]; lost: boolean }>;
}

/** A member with a 45 s session: a hand-over that waited for it to lapse would outlast every wait below. */
async function join(kafka: KafkaClient, groupId: string, topic: string, instanceId: string): Promise<Watched> {
  const owned = new Set<number>();
  const revocations: Watched['revocations'] = [];
  const member = await kafka.join({
    groupId,
    topic,
    instanceId,
    sessionTimeoutMs: 45_000,
    heartbeatIntervalMs: 1_000,
    rebalanceTimeoutMs: 10_000,
    onAssigned: (ps) => ps.forEach((p) => owned.add(p)),
    onRevoked: (ps, lost) => {
      revocations.push({ partitions: [...ps].sort(), lost });
      ps.forEach((p) => owned.delete(p));
    },
    onRecords: async () => undefined,
  });
  closeAfter({ disconnect: () => member.close() });
  return { member, owned, revocations };
}

describe('static group membership', () => {
  it('a static member that closes hands its partitions over at once, not after its 45 s session', async () => {
    const kafka = testKafka();
    const topic = await newTopic(kafka, 4);
    const group = randomGroupId();
    const a = await join(kafka, group, topic, `a-${group}`);
    await waitFor(() => a.owned.size === 4, { message: 'a owns all 4 partitions' });
    const b = await join(kafka, group, topic, `b-${group}`);
    await waitFor(() => a.owned.size + b.owned.size === 4 && a.owned.size > 0 && b.owned.size > 0, { message: 'the 4 partitions shared by a and b' });
    await a.member.close();
    expect(a.revocations.at(-1)?.lost).toBe(false);
    // Without the LeaveGroup the coordinator keeps a's partitions until its session lapses (45 s).
    await waitFor(() => b.owned.size === 4, { timeoutMs: 20_000, message: 'b owns all 4 partitions after a closed' });
    expect([...b.owned].sort()).toEqual([0, 1, 2, 3]);
  });

  it('a second member under the same instance id fences the first, which gives its partitions up as lost', async () => {
    const kafka = testKafka();
    const topic = await newTopic(kafka, 2);
    const group = randomGroupId();
    const first = await join(kafka, group, topic, `same-${group}`);
    await waitFor(() => first.owned.size === 2, { message: 'the first member owns both partitions' });
    const second = await join(kafka, group, topic, `same-${group}`);
    await waitFor(() => second.owned.size === 2, { timeoutMs: 30_000, message: 'the second member owns both partitions' });
    await waitFor(() => first.owned.size === 0, { timeoutMs: 30_000, message: 'the fenced first member owns nothing' });
    expect(first.revocations).toEqual([{ partitions: [0, 1], lost: true }]);
    expect(first.member.assigned()).toEqual([]);
  });
});

describe('cooperative revocation', () => {
  /** A member whose revocation handler takes `handlerMs` (Infinity: until `release`, which closing it calls); when each step happened. */
  async function slowHandOver(kafka: KafkaClient, groupId: string, topic: string, name: string, handlerMs: number, revocationWaitMs?: number) {
    const owned = new Set<number>();
    const assignedAt = new Map<number, number>();
    const handled: Array<{ partitions: number[]; lost: boolean; began: number; ended: number }> = [];
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const member = await kafka.join({
      groupId,
      topic,
      instanceId: `${name}-${groupId}`,
      sessionTimeoutMs: 45_000,
      heartbeatIntervalMs: 1_000,
      rebalanceTimeoutMs: 20_000,
      ...(revocationWaitMs === undefined ? {} : { revocationWaitMs }),
      onAssigned: (ps) => ps.forEach((p) => (owned.add(p), assignedAt.set(p, Date.now()))),
      onRevoked: async (ps, lost) => {
        const began = Date.now();
        ps.forEach((p) => owned.delete(p));
        if (handlerMs === Infinity) await released;
        else await new Promise((r) => setTimeout(r, handlerMs));
        handled.push({ partitions: [...ps].sort(), lost, began, ended: Date.now() });
      },
      onRecords: async () => undefined,
    });
    closeAfter({ disconnect: () => (release(), member.close()) });
    return { member, owned, assignedAt, handled, release };
  }

  it('a revoked partition reaches its next member only after the revoking member\'s handler has finished', async () => {
    const kafka = testKafka();
    const topic = await newTopic(kafka, 4);
    const group = randomGroupId();
    const a = await slowHandOver(kafka, group, topic, 'a', 3_000);
    await waitFor(() => a.owned.size === 4, { message: 'a owns all 4 partitions' });
    const b = await slowHandOver(kafka, group, topic, 'b', 0);
    await waitFor(() => b.owned.size > 0 && a.owned.size + b.owned.size === 4, { timeoutMs: 30_000, message: 'the 4 partitions shared by a and b' });
    expect(a.handled).toHaveLength(1);
    const [revoked] = a.handled;
    expect(revoked!.lost).toBe(false);
    expect(revoked!.partitions).toEqual([...b.owned].sort());
    // The handler ran its 3 s (a timer may fire a millisecond early by Date.now: CI saw 2,999 ms).
    expect(revoked!.ended - revoked!.began).toBeGreaterThanOrEqual(2_990);
    // Every moved partition was assigned to b after a's handler had ended, never while it ran.
    for (const p of b.owned) expect(b.assignedAt.get(p)!).toBeGreaterThanOrEqual(revoked!.ended);
  });

  it('a revocation handler that never ends holds the partitions back for the member\'s wait only', async () => {
    const kafka = testKafka();
    const topic = await newTopic(kafka, 2);
    const group = randomGroupId();
    const a = await slowHandOver(kafka, group, topic, 'a', Infinity, 2_000);
    await waitFor(() => a.owned.size === 2, { message: 'a owns both partitions' });
    const joined = Date.now();
    const b = await slowHandOver(kafka, group, topic, 'b', 0);
    await waitFor(() => b.owned.size === 1, { timeoutMs: 30_000, message: 'b owns a partition although a\'s handler never ends' });
    expect(a.owned.size).toBe(1);
    expect(a.handled).toEqual([]); // the handler is still running
    const [moved] = [...b.owned];
    expect(b.assignedAt.get(moved!)! - joined).toBeGreaterThanOrEqual(2_000);
  });
});
