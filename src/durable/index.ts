export { DurableActor } from './actor.ts';
export {
  adoptActorRow,
  createDurableActor,
  getRuntime,
  openDurableActor,
  type DurableActorOptions,
} from './open.ts';
export { DurableRuntime, type ActorLoader, type RuntimeOptions } from './runtime.ts';
export type {
  EmittedNotice,
  EventSource,
  LiveActor,
  RejectionNotice,
  RuntimeObserver,
  TransitionNotice,
  WriteErrorNotice,
} from './notices.ts';
export {
  decodeActorRow,
  encodeSnapshot,
  restoreSnapshot,
  stateValueExists,
  type ChartVersioning,
} from './codec.ts';
export { buildTransitionRow, checkHead, GENESIS_HASH, hashTransition, sha256 } from './row.ts';
export { pureInitial, pureRestore, pureTransition } from './pure.ts';
export {
  settleStep,
  type ReconcileHook,
  type StepReconciliation,
  type UncertainStep,
} from './steps.ts';
export { DurableInspection, inspectionSessionId, type InspectorLike } from './inspection.ts';
export { boundedType } from './reject.ts';
export { durablePromise, type DurablePromiseArgs } from './invoke.ts';
export * from '../core/clock.ts';
export * from '../core/recovery.ts';
export * from './recover.ts';
export * from './verify.ts';
export { InvalidOptionsError } from '../core/options.ts';
