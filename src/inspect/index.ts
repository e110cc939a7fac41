export * from './mermaid.ts';
export * from './inspector.ts';
