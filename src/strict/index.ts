export * from './errors.ts';
export * from './events.ts';
export * from './state.ts';
export * from './strict-actor.ts';
