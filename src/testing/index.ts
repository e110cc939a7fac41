export * from './explore.ts';
