/**
 * The inspection socket on a Node HTTP server, through `@hono/node-ws` (an
 * optional peer): it hands the `/inspect` route an upgrade and caps the frame
 * size. Without the package the server runs and `/inspect` answers 503.
 */
import type { ServerType } from '@hono/node-server';
import type { createNodeWebSocket as CreateNodeWebSocket } from '@hono/node-ws';
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import type { InspectionSocketSlot } from './inspection.ts';

/** An attached inspection socket. */
export interface AttachedInspectionSocket {
  /** Ends every inspection connection. */
  close(): void;
}

/**
 * Attaches the inspection socket to `http`; undefined (and one warning) when
 * `@hono/node-ws` is not installed.
 */
export async function attachInspectionSocket(
  app: Hono<never>,
  http: ServerType,
  slot: InspectionSocketSlot,
  maxMessageBytes: number,
  logger: Logger,
): Promise<AttachedInspectionSocket | undefined> {
  let createNodeWebSocket: typeof CreateNodeWebSocket;
  try {
    ({ createNodeWebSocket } = await import('@hono/node-ws'));
  } catch {
    logger.warn(
      'the inspection socket is off: install @hono/node-ws (npm install @hono/node-ws) to inspect XState apps',
    );
    return undefined;
  }
  const nodeWs = createNodeWebSocket({ app: app as unknown as Hono });
  // A frame past twice the message limit closes the connection (1009) before it is
  // buffered; one between the two is read and refused by the hub.
  (nodeWs.wss.options as { maxPayload?: number }).maxPayload = maxMessageBytes * 2;
  slot.upgrade = nodeWs.upgradeWebSocket;
  nodeWs.injectWebSocket(http);
  return {
    close() {
      slot.upgrade = undefined;
      for (const client of nodeWs.wss.clients) client.terminate();
      nodeWs.wss.close();
    },
  };
}
