/**
 * An actor's legal moves as framework-free tools (`toolsFor`): the menu follows
 * the state and the caller's role, a call is a durable send, and a bad or stale
 * call comes back as a typed refusal that changed nothing. A scripted adversary
 * makes 10,000 random calls: no illegal transition is accepted, nothing throws,
 * and the log verifies.
 */
import { describe, expect, test } from 'vitest';
import { charts, taskLifecycle, teamWorkflow } from '../machines/index.ts';
import { executeMove, toolsFor, whyNot, type AgentTool } from '../src/index.ts';
import {
  createDurableActor,
  createStrictActor,
  getRuntime,
  openStore,
  verify,
} from '../src/index.ts';
import { seededRandom } from '../src/testing/random.ts';

const chart = taskLifecycle.chart;
const catalog = { schemas: chart.events, samples: chart.eventSamples };

async function task(id: string) {
  const store = openStore('memory:');
  getRuntime(store, { charts });
  const actor = await createDurableActor(chart.machine, {
    id,
    store,
    input: { taskId: id },
    schemas: chart.events,
  });
  return { store, actor };
}

const names = (tools: AgentTool[]) => tools.map((t) => t.name);
const call = (tools: AgentTool[], name: string, input: Record<string, unknown> = {}) => {
  const tool = tools.find((t) => t.name === name);
  if (!tool) throw new Error(`${name} is not on the menu: ${names(tools).join(', ')}`);
  return tool.execute(input);
};

describe('toolsFor', () => {
  test('an agent drives a task from planned to done with tool calls only', async () => {
    const { store, actor } = await task('refund-1');
    expect(names(toolsFor(actor, catalog))).toEqual(['START']);
    expect(await call(toolsFor(actor, catalog), 'START')).toMatchObject({
      ok: true,
      state: 'running',
      legal: [
        'BLOCK_ON_DEPENDENCY',
        'COMPLETE',
        'FATAL_ERROR',
        'PAUSE_FOR_APPROVAL',
        'TRANSIENT_ERROR',
      ],
    });
    const done = await call(toolsFor(actor, catalog), 'COMPLETE', { result: { refunded: 42 } });
    expect(done).toMatchObject({ ok: true, state: 'done', status: 'done', legal: [] });
    expect(toolsFor(actor, catalog)).toEqual([]);
    expect((await store.history('refund-1')).map((r) => r.eventType)).toEqual([
      'xstate.init',
      'START',
      'COMPLETE',
    ]);
    await getRuntime(store).close();
  });

  test('the arguments are the payload: no `type`, JSON Schema from the chart', async () => {
    const { actor } = await task('refund-2');
    await actor.send({ type: 'START' });
    const pause = toolsFor(actor, catalog).find((t) => t.name === 'PAUSE_FOR_APPROVAL');
    expect(pause?.description).toMatch(/ask a person/);
    expect(pause?.inputSchema).toMatchObject({
      type: 'object',
      required: expect.arrayContaining(['reason', 'requestedAt']),
    });
    expect(Object.keys(pause?.inputSchema['properties'] as object)).not.toContain('type');
  });

  test('an agent is never offered an approval; an approver signs as itself', async () => {
    const { store, actor } = await task('refund-3');
    await actor.send({ type: 'START' });
    await actor.send({ type: 'PAUSE_FOR_APPROVAL', reason: 'refund', requestedAt: 0 });
    // Paused: only approvals are legal, and none is an agent's move.
    expect(toolsFor(actor, catalog)).toEqual([]);
    const approver = toolsFor(actor, { ...catalog, role: 'approver', identity: 'alice' });
    expect(names(approver)).toEqual(['APPROVAL_DENIED', 'APPROVAL_GRANTED']);
    const grant = approver.find((t) => t.name === 'APPROVAL_GRANTED');
    expect(Object.keys(grant?.inputSchema['properties'] as object)).not.toContain('approver');
    expect(await grant?.execute({ approver: 'mallory' })).toMatchObject({
      ok: true,
      state: 'running',
    });
    const row = (await store.history('refund-3')).at(-1);
    expect(JSON.parse(row?.event ?? '{}')).toMatchObject({
      type: 'APPROVAL_GRANTED',
      approver: 'alice',
    });
  });

  test('a bad or stale call is a typed refusal that changes nothing', async () => {
    const { store, actor } = await task('refund-4');
    const stale = toolsFor(actor, catalog);
    await call(stale, 'START');
    // START again from a menu of the old state.
    expect(await call(stale, 'START')).toMatchObject({
      ok: false,
      error: { kind: 'invalid_transition', state: 'running' },
      legal: expect.arrayContaining(['COMPLETE']),
    });
    // A payload that breaks the schema.
    expect(
      await call(toolsFor(actor, catalog), 'PAUSE_FOR_APPROVAL', { reason: 7, extra: true }),
    ).toMatchObject({
      ok: false,
      // Both problems at once, so the model fixes them in one call.
      error: {
        kind: 'invalid_event',
        reason: 'invalid_field',
        field: 'reason',
        more: [
          { reason: 'missing_field', field: 'requestedAt' },
          { reason: 'unexpected_field', field: 'extra' },
        ],
      },
    });
    expect(actor.version).toBe(2);
    expect((await store.history('refund-4')).length).toBe(2);
  });

  test('why a move is not legal: not in this state, a guard, a timer, another role', async () => {
    const { actor } = await task('refund-why');
    expect(whyNot(actor, 'COMPLETE')).toMatchObject({ reason: 'not_in_state', state: 'planned' });
    expect(whyNot(actor, 'RETRY')).toMatchObject({ reason: 'timer_only' });
    expect(whyNot(actor, 'NOPE')).toMatchObject({ reason: 'unknown_event' });
    expect(whyNot(actor, 'START')).toMatchObject({ reason: 'legal' });
    const stale = toolsFor(actor, catalog);
    await call(stale, 'START');
    expect(await call(stale, 'START')).toMatchObject({
      ok: false,
      error: { why: { reason: 'not_in_state', state: 'running' } },
    });
    await actor.send({ type: 'PAUSE_FOR_APPROVAL', reason: 'r', requestedAt: 0 });
    expect(
      await executeMove(actor, 'APPROVAL_GRANTED', { approver: 'ana' }, catalog),
    ).toMatchObject({
      ok: false,
      error: { why: { reason: 'role', roles: ['approver'] } },
    });

    const team = teamWorkflow.chart;
    const workflow = createStrictActor(team.machine, { input: team.defaultInput }).start();
    workflow.send({ type: 'START', request: 'dark mode' });
    workflow.send({ type: 'PLAN_DRAFTED', by: 'arch', plan: 'v1' });
    const outsider = { type: 'VOTE', voterId: 'outsider', decision: 'approve' } as const;
    const why = whyNot(workflow, 'VOTE', { schemas: team.events }, outsider);
    expect(why).toMatchObject({ reason: 'guard', state: 'PLANNING.Team_Review' });
    expect(why.guards?.join(' ')).toContain('voteIsValid');
  });

  test('10,000 random calls from an adversarial agent over every chart: nothing illegal accepted, nothing thrown, the log verifies', async () => {
    const random = seededRandom(20261125);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
    const store = openStore('memory:');
    getRuntime(store, { charts });
    const actors = await Promise.all(
      charts.map((c) =>
        createDurableActor(c.machine, {
          id: `adversary-${c.name}`,
          store,
          input: c.defaultInput as never,
          schemas: c.events,
        }),
      ),
    );
    const garbage: unknown[] = [null, 7, 'x', [], { type: 'RESET' }, { __proto__: { a: 1 } }];
    let accepted = 0;
    let refused = 0;
    let renewed = 0;
    // The menu each actor offered last time: calling from it is calling a stale tool.
    const staleOf: AgentTool[][] = actors.map(() => []);
    for (let calls = 0; calls < 10_000;) {
      const index = Math.floor(random() * actors.length);
      const c = charts[index];
      let actor = actors[index];
      if (!actor || !c) throw new Error('no actor');
      const roles = ['agent', 'approver', 'leader'];
      const menuFor = (role: string) =>
        toolsFor(actor as NonNullable<typeof actor>, {
          schemas: c.events,
          samples: c.eventSamples,
          role,
        });
      if (roles.every((role) => menuFor(role).length === 0)) {
        // Finished (or stuck on a timer): the adversary starts another actor of the chart.
        actor = await createDurableActor(c.machine, {
          id: `adversary-${c.name}-${++renewed}`,
          store,
          input: c.defaultInput as never,
          schemas: c.events,
        });
        actors[index] = actor;
        staleOf[index] = [];
      }
      const fresh = menuFor(pick(roles));
      const stale = staleOf[index] ?? [];
      const menu = random() < 0.2 && stale.length > 0 ? stale : fresh;
      if (menu.length === 0) continue;
      const tool = pick(menu);
      // A sample payload of the chart, another event's sample, or garbage.
      const samples = Object.values(c.eventSamples).flat() as Array<Record<string, unknown>>;
      const r = random();
      const input =
        r < 0.6
          ? pick((c.eventSamples[tool.name] ?? [{}]) as Array<Record<string, unknown>>)
          : r < 0.85
            ? pick(samples)
            : (pick(garbage) as Record<string, unknown>);
      const before = actor.getSnapshot();
      const result = await tool.execute(input);
      calls++;
      if (result.ok) {
        accepted++;
        // Accepted only when the event was enabled in the state it was sent in.
        const payload =
          typeof input === 'object' && input !== null && !Array.isArray(input) ? input : {};
        expect(
          before.can({ ...payload, type: tool.name }),
          `${c.name} ${tool.name} ${JSON.stringify(payload)} in ${JSON.stringify(before.value)}`,
        ).toBe(true);
      } else {
        refused++;
        expect(actor.getSnapshot()).toBe(before);
      }
      staleOf[index] = fresh;
    }
    expect(accepted + refused).toBe(10_000);
    expect(accepted).toBeGreaterThan(1_000);
    expect(refused).toBeGreaterThan(1_000);
    const report = await verify(store, { charts });
    expect(report.problems).toEqual([]);
    await getRuntime(store).close();
  });
});
