export * from '../core/errors.ts';
export * from './events.ts';
export * from '../core/state.ts';
export * from './strict-actor.ts';
