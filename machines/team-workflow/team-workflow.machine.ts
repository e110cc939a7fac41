import { and, assertEvent, assign, enqueueActions, setup, stateIn } from 'xstate';
import { eventMeta } from '../event-meta.ts';
import {
  completeState,
  globalEventMeta,
  globalEventTransitions,
  globalEventUpdates,
  idleState,
  workspace,
} from '../plan-workflow/plan-workflow.machine.ts';
import { teamTask } from './team-task.machine.ts';
import {
  DEFAULT_THRESHOLD,
  events,
  teamWorkflowInputSchema,
  type Member,
  type Role,
  type TeamTask,
  type TeamWorkflowContext,
  type TeamWorkflowEvent,
  type TeamWorkflowInput,
  type Threshold,
} from './team-workflow.types.ts';
import { metaTypes } from '../../src/core/meta-check.ts';

type Team = Pick<
  TeamWorkflowContext,
  'workflowId' | 'members' | 'voters' | 'threshold' | 'maxTaskRetries' | 'taskTimeoutMs'
>;

/** Retries per task after a retryable failure, unless the team says otherwise. */
export const DEFAULT_TASK_RETRIES = 2;
/** How long a task may stay in progress, unless the team says otherwise: 4 hours. */
export const DEFAULT_TASK_TIMEOUT_MS = 4 * 60 * 60 * 1000;

/** The context of a run that has not started: the team, an empty workspace. */
function freshContext(team: Team): TeamWorkflowContext {
  return {
    workflowId: team.workflowId,
    members: team.members.map((m) => ({ ...m })),
    voters: [...team.voters],
    threshold: team.threshold,
    maxTaskRetries: team.maxTaskRetries,
    taskTimeoutMs: team.taskTimeoutMs,
    request: null,
    plan: null,
    taskDrafts: [],
    votes: {},
    tasks: {},
    revisions: { plan: 0, tasks: 0 },
    qaReport: null,
    ...workspace.empty(),
  };
}

/** Initial context from the input, validated (an invalid team puts the actor in error). */
export function teamWorkflowContext({ input }: { input: TeamWorkflowInput }): TeamWorkflowContext {
  const team = teamWorkflowInputSchema.parse(input);
  return freshContext({
    workflowId: team.workflowId ?? 'team-workflow',
    members: team.members,
    voters: team.voters ?? team.members.map((m) => m.id),
    threshold: team.threshold ?? DEFAULT_THRESHOLD,
    maxTaskRetries: team.maxTaskRetries ?? DEFAULT_TASK_RETRIES,
    taskTimeoutMs: team.taskTimeoutMs ?? DEFAULT_TASK_TIMEOUT_MS,
  });
}

/** Role of a member, or undefined for a non-member. */
export function roleOf(context: { members: readonly Member[] }, id: string): Role | undefined {
  return context.members.find((m) => m.id === id)?.role;
}

/** A task by id; own keys only, so `constructor` and friends are unknown tasks. */
export function taskOf(context: Pick<TeamWorkflowContext, 'tasks'>, id: string) {
  return Object.hasOwn(context.tasks, id) ? context.tasks[id] : undefined;
}

/**
 * Whether `approvals` of `voters` reach `threshold`, exactly: a fraction `"n/d"`
 * by cross-multiplication (2 of 3 reach 2/3; 1 of 2 does not), a number as given.
 *
 * @example
 * reachesThreshold(2, 3, '2/3'); // true
 * reachesThreshold(2, 3, 0.67);  // false: 0.67 is 67 %
 */
export function reachesThreshold(approvals: number, voters: number, threshold: Threshold): boolean {
  if (typeof threshold === 'number') return approvals / voters >= threshold;
  const [n, d] = threshold.split('/').map(Number) as [number, number];
  return approvals * d >= n * voters;
}

/** Whether approving now (one more approval) reaches the threshold. */
export function approvalReachesThreshold(
  context: Pick<TeamWorkflowContext, 'votes' | 'voters' | 'threshold'>,
): boolean {
  const approvals = Object.values(context.votes).filter((d) => d === 'approve').length + 1;
  return reachesThreshold(approvals, context.voters.length, context.threshold);
}

function patchTask(
  tasks: Record<string, TeamTask>,
  id: string,
  patch: Partial<TeamTask>,
): Record<string, TeamTask> {
  const task = Object.hasOwn(tasks, id) ? tasks[id] : undefined;
  if (!task) return tasks;
  return { ...tasks, [id]: { ...task, ...patch } };
}

/** A reopened task goes back to dispatch for a new attempt. */
function reopened(task: TeamTask): Partial<TeamTask> {
  return {
    status: 'PENDING',
    assignee: null,
    blocker: null,
    reviewedBy: null,
    outcome: null,
    attempt: task.attempt + 1,
  };
}

const settled = (t: TeamTask) => t.status === 'DONE' || t.status === 'FAILED';

const teamSetup = setup({
  types: {
    ...metaTypes,
    context: {} as TeamWorkflowContext,
    events: {} as TeamWorkflowEvent,
    input: {} as TeamWorkflowInput,
  },
  schemas: { events, input: teamWorkflowInputSchema },
  actors: { teamTask },
  guards: {
    isArchitect: ({ context, event }) => {
      assertEvent(event, ['PLAN_DRAFTED', 'TASKS_DRAFTED']);
      return roleOf(context, event.by) === 'architect';
    },
    isQa: ({ context, event }) => {
      assertEvent(event, ['QA_PASS', 'QA_FAIL']);
      return roleOf(context, event.by) === 'qa';
    },
    taskRolesStaffed: ({ context, event }) => {
      assertEvent(event, 'TASKS_DRAFTED');
      return event.tasks.every((t) => context.members.some((m) => m.role === t.role));
    },
    voteIsValid: ({ context, event }) => {
      assertEvent(event, 'VOTE');
      return context.voters.includes(event.voterId) && !Object.hasOwn(context.votes, event.voterId);
    },
    isApproval: ({ event }) => {
      assertEvent(event, ['VOTE', 'CROSS_REVIEW', 'LEADER_DECISION']);
      return event.decision === 'approve';
    },
    isChangeRequest: ({ event }) => {
      assertEvent(event, ['VOTE', 'CROSS_REVIEW', 'LEADER_DECISION']);
      return event.decision === 'request_changes';
    },
    isLeader: ({ context, event }) => {
      assertEvent(event, 'LEADER_DECISION');
      return roleOf(context, event.leaderId) === 'leader';
    },
    reachesThreshold: ({ context }) => approvalReachesThreshold(context),
    assignmentsCoverPending: ({ context, event }) => {
      assertEvent(event, 'TASKS_ASSIGNED');
      const pending = Object.values(context.tasks).filter((t) => t.status === 'PENDING');
      return (
        event.assignments.length === pending.length &&
        event.assignments.every((a) => {
          const task = taskOf(context, a.taskId);
          return task?.status === 'PENDING' && roleOf(context, a.assignee) === task.role;
        })
      );
    },
    /**
     * A report a task's actor can send: the task is out (assigned or in progress),
     * and a blocked task reports only that it is unblocked (or blocked anew).
     */
    taskIsLive: ({ context, event }) => {
      assertEvent(event, 'TASK_STATUS');
      const task = taskOf(context, event.taskId);
      if (task?.status !== 'ASSIGNED' && task?.status !== 'IN_PROGRESS') return false;
      return task.blocker === null || event.status === 'IN_PROGRESS';
    },
    reportsBlocker: ({ event }) => {
      assertEvent(event, 'TASK_STATUS');
      return event.blocker !== null;
    },
    clearsLastBlocker: ({ context, event }) => {
      assertEvent(event, 'TASK_STATUS');
      return (
        event.blocker === null &&
        Object.values(context.tasks).every((t) => t.blocker === null || t.taskId === event.taskId)
      );
    },
    allTasksSettled: ({ context }) => Object.values(context.tasks).every(settled),
    noFailedTasks: ({ context }) =>
      Object.values(context.tasks).every((t) => t.status !== 'FAILED'),
    reopenListValid: ({ context, event }) => {
      assertEvent(event, 'QA_FAIL');
      const listed = new Set(event.taskIds);
      return (
        event.taskIds.every((id) => taskOf(context, id) !== undefined) &&
        Object.values(context.tasks).every((t) => t.status !== 'FAILED' || listed.has(t.taskId))
      );
    },
    crossReviewValid: ({ context, event }) => {
      assertEvent(event, 'CROSS_REVIEW');
      const task = taskOf(context, event.taskId);
      if (!task || task.status !== 'DONE' || task.reviewedBy !== null || task.assignee === null) {
        return false;
      }
      const reviewerRole = roleOf(context, event.reviewerId);
      return reviewerRole !== undefined && reviewerRole !== roleOf(context, task.assignee);
    },
    allDoneTasksReviewed: ({ context }) =>
      Object.values(context.tasks).every((t) => t.status !== 'DONE' || t.reviewedBy !== null),
  },
  actions: {
    recordRequest: assign(({ event }) => {
      assertEvent(event, 'START');
      return { request: event.request };
    }),
    recordPlan: assign(({ event }) => {
      assertEvent(event, 'PLAN_DRAFTED');
      return { plan: event.plan, votes: {} };
    }),
    recordTaskDrafts: assign(({ event }) => {
      assertEvent(event, 'TASKS_DRAFTED');
      return {
        taskDrafts: event.tasks.map((t) => ({ taskId: t.taskId, title: t.title, role: t.role })),
        votes: {},
      };
    }),
    recordVote: assign(({ context, event }) => {
      assertEvent(event, 'VOTE');
      return {
        votes: { ...context.votes, [event.voterId]: event.decision },
        comments:
          event.comment === undefined
            ? context.comments
            : workspace.commentAdded(context.comments, {
                author: event.voterId,
                text: event.comment,
              }),
      };
    }),
    reopenDrafting: assign(({ context }, params: { phase: 'plan' | 'tasks' }) => ({
      votes: {},
      revisions: { ...context.revisions, [params.phase]: context.revisions[params.phase] + 1 },
    })),
    closeVote: assign({ votes: {} }),
    recordLeaderComment: assign(({ context, event }) => {
      assertEvent(event, 'LEADER_DECISION');
      return event.comment === undefined
        ? {}
        : {
            comments: workspace.commentAdded(context.comments, {
              author: event.leaderId,
              text: event.comment,
            }),
          };
    }),
    createTasks: assign(({ context }) => ({
      tasks: Object.fromEntries(
        context.taskDrafts.map((d): [string, TeamTask] => [
          d.taskId,
          {
            taskId: d.taskId,
            title: d.title,
            role: d.role,
            status: 'PENDING',
            assignee: null,
            blocker: null,
            reviewedBy: null,
            attempt: 1,
            outcome: null,
          },
        ]),
      ),
    })),
    assignTasks: assign(({ context, event }) => {
      assertEvent(event, 'TASKS_ASSIGNED');
      let tasks = context.tasks;
      for (const a of event.assignments) {
        tasks = patchTask(tasks, a.taskId, { status: 'ASSIGNED', assignee: a.assignee });
      }
      return { tasks };
    }),
    /** One actor per assigned task, with the task's id as its child id. */
    spawnTasks: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'TASKS_ASSIGNED');
      for (const a of event.assignments) {
        const task = taskOf(context, a.taskId);
        if (!task) continue;
        enqueue.spawnChild('teamTask', {
          id: task.taskId,
          input: {
            taskId: task.taskId,
            title: task.title,
            role: task.role,
            assignee: a.assignee,
            attempt: task.attempt,
            maxRetries: context.maxTaskRetries,
            timeoutMs: context.taskTimeoutMs,
          },
        });
      }
    }),
    /** Leaving execution early (RESET) stops the tasks still out. */
    stopOpenTasks: enqueueActions(({ context, enqueue }) => {
      for (const t of Object.values(context.tasks)) {
        if (t.status === 'ASSIGNED' || t.status === 'IN_PROGRESS') enqueue.stopChild(t.taskId);
      }
    }),
    recordTaskStatus: assign(({ context, event }) => {
      assertEvent(event, 'TASK_STATUS');
      return {
        tasks: patchTask(context.tasks, event.taskId, {
          status: event.status,
          blocker: event.blocker,
          outcome: event.outcome,
        }),
      };
    }),
    recordQaPass: assign(({ event }) => {
      assertEvent(event, 'QA_PASS');
      return { qaReport: event.report ?? null };
    }),
    reopenFailedQa: assign(({ context, event }) => {
      assertEvent(event, 'QA_FAIL');
      let tasks = context.tasks;
      for (const id of event.taskIds) {
        const task = taskOf({ tasks }, id);
        if (task) tasks = patchTask(tasks, id, reopened(task));
      }
      return { tasks, qaReport: event.report };
    }),
    recordReview: assign(({ context, event }) => {
      assertEvent(event, 'CROSS_REVIEW');
      return {
        tasks: patchTask(context.tasks, event.taskId, { reviewedBy: event.reviewerId }),
      };
    }),
    reopenReviewedTask: assign(({ context, event }) => {
      assertEvent(event, 'CROSS_REVIEW');
      const task = taskOf(context, event.taskId);
      return {
        tasks: task ? patchTask(context.tasks, event.taskId, reopened(task)) : context.tasks,
      };
    }),
    addReviewComment: assign(({ context, event }) => {
      assertEvent(event, 'CROSS_REVIEW');
      if (event.comment === undefined) return {};
      return {
        comments: workspace.commentAdded(context.comments, {
          author: event.reviewerId,
          text: event.comment,
        }),
      };
    }),
    addArtifact: assign(({ context, event }) => globalEventUpdates.ARTIFACT_ADDED(context, event)),
    addComment: assign(({ context, event }) => globalEventUpdates.ADD_COMMENT(context, event)),
    clearComments: assign(() => globalEventUpdates.CLEAR_COMMENTS()),
    resetContext: assign(({ context }) => freshContext(context)),
  },
});

/**
 * The team's review of a draft (the plan, or the tasks): every valid vote is
 * recorded; enough approvals end it in Approved, a change request sends it back to
 * `drafting` for another revision of `phase`. The Team Leader may decide instead.
 */
function teamReview<
  const Drafting extends 'Architect_Drafts' | 'Architect_Decomposes',
  const Phase extends 'plan' | 'tasks',
>(drafting: Drafting, phase: Phase) {
  // `as const`: the literal types the machine config would give it inline.
  return teamSetup.createStateConfig({
    meta: { class: 'waiting', color: '#6366f1' },
    on: {
      VOTE: [
        {
          guard: and(['voteIsValid', 'isApproval', 'reachesThreshold']),
          target: 'Approved',
          actions: 'recordVote',
        },
        {
          guard: and(['voteIsValid', 'isChangeRequest']),
          target: drafting,
          actions: ['recordVote', { type: 'reopenDrafting', params: { phase } }],
        },
        { guard: 'voteIsValid', actions: 'recordVote' },
      ],
      LEADER_DECISION: [
        {
          guard: and(['isLeader', 'isApproval']),
          target: 'Approved',
          actions: 'recordLeaderComment',
        },
        {
          guard: and(['isLeader', 'isChangeRequest']),
          target: drafting,
          actions: ['recordLeaderComment', { type: 'reopenDrafting', params: { phase } }],
        },
      ],
    },
  } as const);
}

export const machine = teamSetup.createMachine({
  id: 'team-workflow',
  context: teamWorkflowContext,
  initial: 'IDLE',
  // The single-agent chart's global events, with the same context effects.
  on: globalEventTransitions,
  meta: {
    events: eventMeta({
      START: 'Begin: the architect drafts a plan.',
      PLAN_DRAFTED: {
        signer: 'by',
        description: 'The architect submits the plan to the team vote.',
      },
      TASKS_DRAFTED: {
        signer: 'by',
        description: 'The architect submits the tasks to the team vote.',
      },
      VOTE: { signer: 'voterId', description: 'A team member approves or requests changes.' },
      LEADER_DECISION: {
        roles: ['leader', 'approver'],
        signer: 'leaderId',
        description:
          'The Team Leader approves or sends back the plan or the tasks, instead of a vote.',
      },
      TASKS_ASSIGNED: 'Every pending task gets an owner: work starts.',
      TASK_STATUS: {
        kind: 'internal',
        description:
          "A task's own actor reports its status (in progress, blocked, done, failed); workers send the task events to the task.",
      },
      QA_PASS: { signer: 'by', description: 'QA accepts the work: cross review starts.' },
      QA_FAIL: { signer: 'by', description: 'QA reopens tasks: back to execution.' },
      CROSS_REVIEW: { signer: 'reviewerId', description: 'Another role reviews a done task.' },
      ...globalEventMeta,
    }),
  },
  states: {
    IDLE: idleState({ START: { target: 'PLANNING', actions: 'recordRequest' } }),
    PLANNING: {
      meta: { class: 'working', color: '#a855f7' },
      description: 'Architect drafts the plan; the team votes on it',
      initial: 'Architect_Drafts',
      states: {
        Architect_Drafts: {
          on: {
            PLAN_DRAFTED: { guard: 'isArchitect', target: 'Team_Review', actions: 'recordPlan' },
          },
        },
        Team_Review: teamReview('Architect_Drafts', 'plan'),
        Approved: {
          description: 'Consensus reached (CONSENSUS_APPROVED in “Agent Workflow State Machine”)',
          type: 'final',
        },
      },
      onDone: { target: 'TASK_CREATION', actions: 'closeVote' },
    },
    TASK_CREATION: {
      meta: { class: 'working', color: '#a855f7' },
      description: 'Architect decomposes the plan into tasks; the team votes on them',
      initial: 'Architect_Decomposes',
      states: {
        Architect_Decomposes: {
          on: {
            TASKS_DRAFTED: {
              guard: and(['isArchitect', 'taskRolesStaffed']),
              target: 'Team_Review',
              actions: 'recordTaskDrafts',
            },
          },
        },
        Team_Review: teamReview('Architect_Decomposes', 'tasks'),
        Approved: {
          description: 'Consensus reached (CONSENSUS_APPROVED in “Agent Workflow State Machine”)',
          type: 'final',
        },
      },
      onDone: { target: 'EXECUTION', actions: ['closeVote', 'createTasks'] },
    },
    EXECUTION: {
      meta: { class: 'working' },
      description: 'Tasks are dispatched and worked on in parallel',
      initial: 'Dispatch',
      // Each assigned task is its own durable actor (team-task.machine.ts), spawned
      // on dispatch; its reports arrive here as TASK_STATUS, in Parallel_Work and in
      // Blocked alike.
      on: {
        TASK_STATUS: [
          {
            guard: and(['taskIsLive', 'reportsBlocker']),
            target: '.Blocked',
            actions: 'recordTaskStatus',
          },
          {
            guard: and([
              'taskIsLive',
              stateIn('#team-workflow.EXECUTION.Blocked'),
              'clearsLastBlocker',
            ]),
            target: '.Parallel_Work',
            actions: 'recordTaskStatus',
          },
          { guard: 'taskIsLive', actions: 'recordTaskStatus' },
        ],
      },
      exit: 'stopOpenTasks',
      states: {
        Dispatch: {
          on: {
            TASKS_ASSIGNED: {
              guard: 'assignmentsCoverPending',
              target: 'Parallel_Work',
              actions: ['assignTasks', 'spawnTasks'],
            },
          },
        },
        Parallel_Work: {
          always: { guard: 'allTasksSettled', target: 'All_Complete' },
        },
        Blocked: {
          meta: { class: 'waiting' },
          description: 'A task raised a blocker; back to parallel work when the last one clears',
        },
        All_Complete: { description: 'Every task is DONE or FAILED', type: 'final' },
      },
      onDone: { target: 'VERIFICATION' },
    },
    VERIFICATION: {
      meta: { class: 'working', color: '#f97316' },
      description: 'QA reviews, then each done task is cross-reviewed by another role',
      initial: 'QA_Review',
      states: {
        QA_Review: {
          on: {
            QA_PASS: {
              guard: and(['isQa', 'noFailedTasks']),
              target: 'Cross_Review',
              actions: 'recordQaPass',
            },
            QA_FAIL: {
              guard: and(['isQa', 'reopenListValid']),
              target: '#team-workflow.EXECUTION',
              actions: 'reopenFailedQa',
            },
          },
        },
        Cross_Review: {
          always: { guard: 'allDoneTasksReviewed', target: 'Verified' },
          on: {
            CROSS_REVIEW: [
              {
                guard: and(['crossReviewValid', 'isApproval']),
                actions: ['recordReview', 'addReviewComment'],
              },
              {
                guard: and(['crossReviewValid', 'isChangeRequest']),
                target: '#team-workflow.EXECUTION',
                actions: ['reopenReviewedTask', 'addReviewComment'],
              },
            ],
          },
        },
        Verified: {
          description: 'Every done task approved (ALL_APPROVED in “Agent Workflow State Machine”)',
          type: 'final',
        },
      },
      onDone: { target: 'COMPLETE' },
    },
    COMPLETE: completeState,
  },
});
