export * from './explore.ts';
export * from './plan.ts';
export * from './replay.ts';
export * from './random.ts';
export * from './round-trip.ts';
