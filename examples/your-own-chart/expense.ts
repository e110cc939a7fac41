/**
 * An expense claim: your own chart, written as any XState v5 machine
 * (`setup().createMachine`) and declared with `defineChart(machine, …)`.
 * Everything after the machine is optional: without `events` the machine's own
 * event types are still enforced, without `meta` every state is `working`
 * (a final one `completed`) and every event a command.
 */
import { assign, setup } from 'xstate';
import * as z from 'zod';
import { defineChart, eventSchema, type EventFromSchemas } from 'agentcharts';

/** Event payloads, checked on every send (optional). */
export const events = {
  SUBMIT: eventSchema('SUBMIT', { amount: z.number().int().positive() }),
  APPROVE: eventSchema('APPROVE', { approver: z.string().min(1) }),
  REJECT: eventSchema('REJECT', { approver: z.string().min(1) }),
};

export type ExpenseEvent = EventFromSchemas<typeof events>;

export interface ExpenseContext {
  amount: number;
  decidedBy: string | null;
}

export const machine = setup({
  types: { context: {} as ExpenseContext, events: {} as ExpenseEvent },
}).createMachine({
  id: 'expense',
  context: { amount: 0, decidedBy: null },
  initial: 'draft',
  // What the states and events mean to monitoring, the dashboard and the server (optional).
  meta: {
    events: {
      APPROVE: { kind: 'approval', signer: 'approver' },
      REJECT: { kind: 'approval', signer: 'approver' },
    },
  },
  states: {
    draft: {
      meta: { class: 'idle' },
      on: {
        SUBMIT: { target: 'review', actions: assign({ amount: ({ event }) => event.amount }) },
      },
    },
    review: {
      meta: { class: 'paused' },
      on: {
        APPROVE: { target: 'paid', actions: assign({ decidedBy: ({ event }) => event.approver }) },
        REJECT: {
          target: 'rejected',
          actions: assign({ decidedBy: ({ event }) => event.approver }),
        },
      },
    },
    paid: { type: 'final' },
    rejected: { type: 'final', meta: { class: 'failed' } },
  },
});

/** The chart: the machine, its event schemas and sample events for generated tests. */
export const chart = defineChart(machine, {
  description: 'An expense claim: draft, review by an approver, paid or rejected',
  events,
  eventSamples: {
    SUBMIT: [{ type: 'SUBMIT', amount: 42 }],
    APPROVE: [{ type: 'APPROVE', approver: 'ana' }],
    REJECT: [{ type: 'REJECT', approver: 'ana' }],
  },
});
