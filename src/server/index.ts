export {
  createServer,
  listen,
  type AgentchartsServer,
  type DashboardOptions,
  type ListeningServer,
  type ServerOptions,
} from './app.ts';
export * from './auth.ts';
