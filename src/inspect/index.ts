export * from './mermaid.ts';
