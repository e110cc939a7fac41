/**
 * A document review: your own chart, written as any XState v5 machine
 * (`setup().createMachine`) and declared with `defineChart(machine, …)`. It has
 * what real charts have: a nested state (`drafting`), a parallel one
 * (`reviewing`: legal and editorial review at once), a deadline (`after`), an
 * invoked promise (`countWords`, a `durablePromise` with a declared output) and
 * zod event schemas. It imports only `agentcharts/chart`, which imports nothing
 * of Node: the same file runs in the durable runtime, the CLI and a browser.
 */
import { assign, setup } from 'xstate';
import * as z from 'zod';
import {
  defineChart,
  durablePromise,
  eventSchema,
  type DurablePromiseArgs,
  type EventFromSchemas,
} from 'agentcharts/chart';

/** Event payloads, checked on every send (and the types of `send`). */
export const events = {
  SUBMIT: eventSchema('SUBMIT', { title: z.string().min(1).max(200), author: z.string().min(1) }),
  APPROVE: eventSchema('APPROVE', {
    reviewer: z.string().min(1),
    area: z.enum(['legal', 'editorial']),
  }),
  REQUEST_CHANGES: eventSchema('REQUEST_CHANGES', {
    reviewer: z.string().min(1),
    note: z.string().max(500),
  }),
  WITHDRAW: eventSchema('WITHDRAW'),
};

export type DocReviewEvent = EventFromSchemas<typeof events>;

export interface DocReviewContext {
  title: string;
  author: string;
  words: number;
  approvedBy: string[];
}

/** Longest document the review takes. */
export const MAX_WORDS = 5000;

/**
 * Counts the document's words: a stand-in for a call to a service. Its output
 * type is declared, so a wrong output is an error and generated tests know what
 * a sample looks like.
 */
export const countWords = durablePromise(
  ({ input }: DurablePromiseArgs<{ title: string }>) =>
    Promise.resolve({ words: input.title.split(/\s+/).filter(Boolean).length * 250 }),
  { output: z.object({ words: z.number().int().nonnegative() }) },
);

/** The chart's implementations (actors, delays, guards, actions): version 2 reuses them. */
export const docReviewSetup = setup({
  types: { context: {} as DocReviewContext, events: {} as DocReviewEvent },
  actors: { countWords },
  delays: { reviewDeadline: 48 * 3600_000 },
  guards: {
    tooLong: ({ event }) => (event as { output?: { words: number } }).output!.words > MAX_WORDS,
    legal: ({ event }) => event.type === 'APPROVE' && event.area === 'legal',
    editorial: ({ event }) => event.type === 'APPROVE' && event.area === 'editorial',
  },
  actions: {
    // A submission starts a review afresh.
    record: assign({
      title: ({ event }) => (event.type === 'SUBMIT' ? event.title : ''),
      author: ({ event }) => (event.type === 'SUBMIT' ? event.author : ''),
      approvedBy: [],
    }),
    approve: assign({
      approvedBy: ({ context, event }) =>
        event.type === 'APPROVE' ? [...context.approvedBy, event.reviewer] : context.approvedBy,
    }),
  },
});

export const machine = docReviewSetup.createMachine({
  id: 'doc-review',
  context: { title: '', author: '', words: 0, approvedBy: [] },
  initial: 'drafting',
  // What the states and events mean to monitoring, the dashboard, the server and agents.
  meta: {
    events: {
      APPROVE: { kind: 'approval', signer: 'reviewer' },
      REQUEST_CHANGES: { kind: 'approval', signer: 'reviewer' },
    },
    delays: { reviewDeadline: 'REVIEW_TIMEOUT' },
    invokes: { count: { rerun: 'safe' } },
  },
  on: { WITHDRAW: '.withdrawn' },
  states: {
    drafting: {
      initial: 'writing',
      states: {
        writing: {
          meta: { class: 'idle' },
          on: { SUBMIT: { target: 'checking', actions: 'record' } },
        },
        checking: {
          invoke: {
            id: 'count',
            src: 'countWords',
            input: ({ context }) => ({ title: context.title }),
            onDone: [
              { guard: 'tooLong', target: 'writing' },
              {
                target: '#doc-review.reviewing',
                actions: assign({ words: ({ event }) => event.output.words }),
              },
            ],
            onError: 'writing',
          },
        },
      },
    },
    reviewing: {
      type: 'parallel',
      // Waiting for people, whatever each region's state.
      meta: { class: 'paused' },
      after: { reviewDeadline: 'expired' },
      on: { REQUEST_CHANGES: '#doc-review.drafting.writing' },
      onDone: 'published',
      states: {
        legal: {
          initial: 'pending',
          states: {
            pending: { on: { APPROVE: { guard: 'legal', target: 'ok', actions: 'approve' } } },
            ok: { type: 'final' },
          },
        },
        editorial: {
          initial: 'pending',
          states: {
            pending: {
              on: { APPROVE: { guard: 'editorial', target: 'ok', actions: 'approve' } },
            },
            ok: { type: 'final' },
          },
        },
      },
    },
    published: { type: 'final' },
    expired: { type: 'final', meta: { class: 'failed' } },
    withdrawn: { type: 'final', meta: { class: 'terminated' } },
  },
});

/** The chart: the machine, its event schemas, and samples for generated tests and `paths`. */
export const chart = defineChart(machine, {
  description: 'A document review: drafting, a word count, legal and editorial review at once',
  events,
  eventSamples: {
    SUBMIT: [{ type: 'SUBMIT', title: 'Quarterly report', author: 'bo' }],
    APPROVE: [
      { type: 'APPROVE', reviewer: 'ana', area: 'legal' },
      { type: 'APPROVE', reviewer: 'eve', area: 'editorial' },
    ],
    REQUEST_CHANGES: [{ type: 'REQUEST_CHANGES', reviewer: 'ana', note: 'shorter' }],
    WITHDRAW: [{ type: 'WITHDRAW' }],
    // The word count's outcomes: one that passes, one too long.
    'xstate.done.actor.count': [
      { type: 'xstate.done.actor.count', output: { words: 500 } },
      { type: 'xstate.done.actor.count', output: { words: 9000 } },
    ],
  },
});
