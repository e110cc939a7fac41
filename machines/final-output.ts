/**
 * Shared by the charts whose final states each declare `output: { status }`
 * (agent-status, agent-runtime): their machine `output` mapper reads that status back
 * and adds what the context recorded.
 */
import type { DoneStateEvent } from 'xstate';

/** What a machine's `output` mapper receives when the run ends. */
export interface RunEnd<TContext> {
  context: TContext;
  /** The done event of the final state reached; its `output` is what that state declares. */
  event: DoneStateEvent;
}

/** The `status` the final state reached declares as its output. */
export function endStatus<TStatus extends string>(event: DoneStateEvent): TStatus {
  return (event.output as { status: TStatus }).status;
}
