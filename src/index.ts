export * from './strict/index.ts';
export * from './testing/index.ts';
export * from './catalog.ts';
export * from './durable/policy.ts';
