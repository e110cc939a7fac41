/**
 * What “Agent Workflow State Machine” promises of the team workflow (consensus
 * votes, parallel work, QA then cross review), as properties `agentcharts check`
 * proves for every path (src/core/properties.ts).
 */
import {
  noDeadEnd,
  only,
  reachable,
  terminates,
  type PropertyOf,
} from '../../src/core/properties.ts';
import type { machine } from './team-workflow.machine.ts';

/** A consensus vote's approval or the Team Leader's. */
const approval = [
  { type: 'VOTE', decision: 'approve' },
  { type: 'LEADER_DECISION', decision: 'approve' },
] as const;

export const properties = [
  reachable('COMPLETE', {
    description:
      '“Agent Workflow State Machine”, team: plan → approve → tasks → approve → execute → verify → complete.',
  }),
  reachable('EXECUTION.Blocked', {
    description:
      '“Agent Workflow State Machine”, team: a worker can raise a blocker (Parallel_Work → Blocked).',
  }),
  only('PLANNING', 'TASK_CREATION', {
    via: approval,
    description:
      '“Agent Workflow State Machine”, team: “Team Leader or Consensus Vote approves” the plan: only an approving vote (the one that reaches the threshold) or the Team Leader’s approval moves on to task creation, never a request for changes or a draft.',
  }),
  only('TASK_CREATION', 'EXECUTION', {
    via: approval,
    description:
      '“Agent Workflow State Machine”, team: the tasks are executed only after a consensus vote or the Team Leader approved them.',
  }),
  only('*', 'VERIFICATION.Cross_Review', {
    via: ['QA_PASS'],
    description:
      '“Agent Workflow State Machine”, team: cross review starts only after QA passed the work.',
  }),
  noDeadEnd({
    description: '“Agent Workflow State Machine”, team: every state has a way out.',
  }),
  terminates({
    description:
      '“Agent Workflow State Machine”, team: from every state the workflow can still complete.',
  }),
] as const satisfies readonly PropertyOf<typeof machine>[];
