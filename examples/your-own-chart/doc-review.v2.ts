/**
 * Version 2 of the document review: `drafting` is renamed `draft`. Reviews stored
 * by version 1 in `drafting` would not load, so version 2 carries a migration
 * from 1 (docs/versions.md): `check-deploy` finds no actor stranded, and the
 * first load of each migrates it once, on the record.
 */
import { defineChart, type PersistedSnapshot } from 'agentcharts/chart';
import { chart as v1, docReviewSetup, machine as v1Machine } from './doc-review.ts';

const { drafting, reviewing, ...rest } = v1Machine.config.states ?? {};

/** Version 1's config with the state renamed (its implementations are the same). */
type Config = Parameters<typeof docReviewSetup.createMachine>[0];

export const machine = docReviewSetup.createMachine({
  ...v1Machine.config,
  initial: 'draft',
  states: {
    ...rest,
    draft: drafting ?? {},
    reviewing: { ...reviewing, on: { REQUEST_CHANGES: '#doc-review.draft.writing' } },
  },
} as Config);

/** `{ drafting: … }` stored by version 1 is `{ draft: … }` in version 2. */
const renameDrafting = (s: PersistedSnapshot): PersistedSnapshot => {
  const value = s['value'] as Record<string, unknown> | string;
  if (typeof value !== 'object' || !('drafting' in value)) return s;
  const { drafting: inner, ...others } = value;
  return { ...s, value: { ...others, draft: inner } };
};

export const chart = defineChart(machine, {
  description: v1.description,
  events: v1.events,
  eventSamples: v1.eventSamples,
  version: 2,
  migrations: { 1: renameDrafting },
});
