/**
 * Legal moves as data: in every state a chart reaches, the events offered are
 * exactly those the actor accepts (for some sample payload), never a timer-only
 * or internal one, each with its JSON Schema and its metadata.
 */
import { describe, expect, test } from 'vitest';
import { assign, setup } from 'xstate';
import { charts, taskLifecycle, teamWorkflow } from '../machines/index.ts';
import { legalEvents } from '../src/index.ts';
import { chartMeta } from '../src/core/meta.ts';
import { createDurableActor, createStrictActor, getRuntime, openStore } from '../src/index.ts';
import { exploreMachine } from '../src/testing/explore.ts';

describe('legalEvents', () => {
  test('the task lifecycle: the document’s moves per state, timers never offered', () => {
    const chart = taskLifecycle.chart;
    const actor = createStrictActor(chart.machine, { input: { taskId: 't' } }).start();
    const types = () =>
      legalEvents(actor, { schemas: chart.events, samples: chart.eventSamples }).map((e) => e.type);
    expect(types()).toEqual(['START']);
    actor.send({ type: 'START' });
    expect(types()).toEqual([
      'BLOCK_ON_DEPENDENCY',
      'COMPLETE',
      'FATAL_ERROR',
      'PAUSE_FOR_APPROVAL',
      'TRANSIENT_ERROR',
    ]);
    actor.send({ type: 'PAUSE_FOR_APPROVAL', reason: 'refund', requestedAt: 0 });
    const paused = legalEvents(actor, { schemas: chart.events, samples: chart.eventSamples });
    // TIMEOUT is the approval timer's: not a move anyone can make.
    expect(paused.map((e) => e.type)).toEqual(['APPROVAL_DENIED', 'APPROVAL_GRANTED']);
    expect(paused[1]).toMatchObject({
      kind: 'approval',
      roles: ['approver'],
      signer: 'approver',
      decidedBy: 'evaluated',
    });
    expect(paused[1]?.schema).toMatchObject({
      type: 'object',
      properties: { type: { const: 'APPROVAL_GRANTED' }, approver: { type: 'string' } },
    });
  });

  test('a wildcard transition offers no move of its own: it names no event type', () => {
    // `'*'` takes any event, but `{ type: '*' }` is no move an agent can be offered:
    // the chart's vocabulary holds the types it names (the control: CANCEL).
    const machine = setup({
      types: { context: {} as { n: number } },
      actions: { noted: assign({ n: ({ context }) => context.n + 1 }) },
    }).createMachine({
      id: 'wild-moves',
      context: { n: 0 },
      initial: 'open',
      states: {
        open: {
          on: { CANCEL: 'closed', '*': { actions: 'noted' }, 'audit.*': { actions: 'noted' } },
        },
        closed: { type: 'final' },
      },
    });
    expect(chartMeta(machine).events.map((e) => e.type)).toEqual(['CANCEL']);
    const actor = createStrictActor(machine).start();
    expect(legalEvents(actor).map((e) => e.type)).toEqual(['CANCEL']);
  });

  test('a declared family (`audit.*`) speaks for the types it matches, never for internal ones, and is no type', () => {
    const machine = setup({}).createMachine({
      id: 'wild-declared',
      meta: {
        events: {
          '*': { kind: 'command', roles: ['leader'] },
          'audit.*': { kind: 'command', roles: ['operator'] },
          'audit.ping': { kind: 'command', roles: ['agent'] },
        },
      },
      initial: 'open',
      states: { open: { on: { CANCEL: 'closed', '*': { target: 'open' } } }, closed: {} },
    });
    const meta = chartMeta(machine);
    expect(meta.events.map((e) => e.type)).toEqual(['CANCEL', 'audit.ping']);
    expect(meta.event('audit.login').roles).toEqual(['operator']); // the longer descriptor
    expect(meta.event('audit').roles).toEqual(['operator']); // `audit.*` matches `audit`
    expect(meta.event('audit.ping').roles).toEqual(['agent']); // its own key wins
    expect(meta.event('auditor').roles).toEqual(['leader']); // only `*` matches
    expect(meta.event('xstate.after.1.x')).toMatchObject({ kind: 'internal', roles: [] });
  });

  test('guards that read the payload are decided with the chart’s samples (a team vote)', () => {
    const chart = teamWorkflow.chart;
    const actor = createStrictActor(chart.machine, { input: chart.defaultInput }).start();
    actor.send({ type: 'START', request: 'dark mode' });
    actor.send({ type: 'PLAN_DRAFTED', by: 'arch', plan: 'v1' });
    const offered = legalEvents(actor, { schemas: chart.events, samples: chart.eventSamples });
    expect(offered.find((e) => e.type === 'VOTE')).toMatchObject({ decidedBy: 'by-sample' });
    expect(offered.map((e) => e.type)).toContain('LEADER_DECISION');
    expect(offered.map((e) => e.type)).not.toContain('PLAN_DRAFTED');
  });

  test('in every reachable state of every chart: offered exactly when accepted (by the type or a sample), never timer-only', () => {
    for (const chart of charts) {
      const meta = chartMeta(chart.machine);
      const graph = exploreMachine(chart.machine, {
        events: chart.eventSamples,
        input: chart.defaultInput,
        ...(chart.serializeState ? { serializeState: chart.serializeState } : {}),
      });
      for (const snapshot of graph.states.values()) {
        const offered = legalEvents(
          { machine: chart.machine, getSnapshot: () => snapshot },
          { schemas: chart.events, samples: chart.eventSamples },
        );
        for (const e of offered) {
          expect(meta.event(e.type).kind).not.toBe('timer-only');
          const samples = chart.eventSamples[e.type as never] as unknown as
            readonly { type: string }[] | undefined;
          const can = (event: { type: string }) => {
            try {
              return snapshot.can(event);
            } catch {
              return false; // a guard that reads a payload field the bare type lacks
            }
          };
          const accepted = can({ type: e.type }) || (samples ?? []).some(can);
          expect(accepted, `${chart.name} ${e.type}`).toBe(true);
        }
        if (snapshot.status !== 'active') expect(offered).toEqual([]);
        // And the other way: every event a sample shows accepted is offered.
        else {
          for (const info of meta.events) {
            if (info.kind === 'timer-only' || info.kind === 'internal') continue;
            const samples = (chart.eventSamples[info.type as never] ?? []) as unknown as readonly {
              type: string;
            }[];
            const acceptedBySample = samples.some((sample) => {
              try {
                return snapshot.can(sample);
              } catch {
                return false;
              }
            });
            if (acceptedBySample) {
              expect(
                offered.map((e) => e.type),
                `${chart.name} ${info.type}`,
              ).toContain(info.type);
            }
          }
        }
      }
    }
  });

  test('works on a durable actor too', async () => {
    const chart = taskLifecycle.chart;
    const store = openStore('memory:');
    const actor = await createDurableActor(chart.machine, {
      id: 'legal',
      store,
      input: { taskId: 'legal' },
      schemas: chart.events,
    });
    expect(legalEvents(actor).map((e) => e.type)).toEqual(['START']);
    await getRuntime(store).close();
  });
});
