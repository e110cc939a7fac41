export * from './strict/index.ts';
export * from './testing/index.ts';
export * from './inspect/index.ts';
export * from './observe/index.ts';
export * from './core/chart.ts';
export * from './durable/index.ts';
export * from './store/index.ts';
export * from './server/index.ts';
