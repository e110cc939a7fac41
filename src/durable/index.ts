export * from './actor.ts';
export * from '../core/clock.ts';
export * from './codec.ts';
export * from './hash.ts';
export * from '../core/recovery.ts';
export * from './recover.ts';
export * from './runtime.ts';
export * from './verify.ts';
