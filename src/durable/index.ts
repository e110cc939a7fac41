export * from './actor.ts';
export * from './clock.ts';
export * from './codec.ts';
export * from './hash.ts';
export * from './policy.ts';
export * from './recover.ts';
export * from './runtime.ts';
export * from './verify.ts';
