/**
 * Verifying messages between actors: every delivery in a receiver's log (a row
 * from `message`, a creation from `spawn`) must match a message its sender's log
 * produces when replayed — same receiver, same event — at the sender's version
 * and position it names. A forged, altered or misdirected delivery is a problem.
 */
import { isDeepStrictEqual } from 'node:util';
import type { OutgoingMessage, TransitionRow } from '../store/types.ts';
import type { VerifyProblem } from './verify-report.ts';

interface Claim {
  actorId: string;
  seq: number;
  from: string;
  fromSeq: number;
  idx: number;
  kind: 'spawn' | 'event' | 'stop';
  body: unknown;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export class MessageLedger {
  private readonly outbox = new Map<string, OutgoingMessage>();
  /** Where agentcharts 0.1.0 ordered a row's messages differently (`Effects.legacyMessages`). */
  private readonly legacy = new Map<string, OutgoingMessage>();
  private readonly claims: Claim[] = [];
  private readonly notReplayed = new Set<string>();

  /** A row of a chart version not registered: what it sent cannot be checked. */
  unreplayed(actorId: string, seq: number): void {
    this.notReplayed.add(`${actorId}:${seq}`);
  }

  /** Records what one replayed row sends (and in what order older runtimes wrote it). */
  sent(
    actorId: string,
    seq: number,
    messages: readonly OutgoingMessage[],
    legacy?: readonly OutgoingMessage[],
  ): void {
    for (const m of messages) this.outbox.set(`${actorId}:${seq}:${m.idx}`, m);
    if (legacy) for (const m of legacy) this.legacy.set(`${actorId}:${seq}:${m.idx}`, m);
  }

  /** Records what one row says it received. */
  row(actorId: string, row: TransitionRow): void {
    const meta = parse(row.metadata) as
      | { source?: unknown; from?: unknown; parent?: unknown; fromSeq?: unknown; idx?: unknown }
      | undefined;
    const from =
      meta?.source === 'message' ? meta.from : meta?.source === 'spawn' ? meta.parent : undefined;
    if (
      typeof from !== 'string' ||
      typeof meta?.fromSeq !== 'number' ||
      typeof meta.idx !== 'number'
    ) {
      return;
    }
    const body = parse(row.event) as { type?: unknown } | undefined;
    this.claims.push({
      actorId,
      seq: row.seq,
      from,
      fromSeq: meta.fromSeq,
      idx: meta.idx,
      kind: meta.source === 'spawn' ? 'spawn' : body?.type === 'xstate.stop' ? 'stop' : 'event',
      body,
    });
  }

  /** Deliveries no sender's log accounts for. */
  problems(): VerifyProblem[] {
    const problems: VerifyProblem[] = [];
    const delivered = new Set<string>();
    for (const c of this.claims) {
      const key = `${c.from}:${c.fromSeq}:${c.idx}`;
      if (this.notReplayed.has(`${c.from}:${c.fromSeq}`)) continue;
      const sent = matches(this.outbox.get(key), c)
        ? this.outbox.get(key)
        : (this.legacy.get(key) ?? this.outbox.get(key));
      const where = `message ${c.idx} of ${c.from} seq ${c.fromSeq}`;
      if (delivered.has(key)) {
        problems.push({
          actorId: c.actorId,
          kind: 'message',
          seq: c.seq,
          detail: `${where} was delivered twice`,
        });
      } else if (!sent || sent.to !== c.actorId || sent.kind !== c.kind) {
        problems.push({
          actorId: c.actorId,
          kind: 'message',
          seq: c.seq,
          detail: `${where} is not in its sender's log`,
        });
      } else if (c.kind !== 'spawn' && !isDeepStrictEqual(parse(sent.body), c.body)) {
        problems.push({
          actorId: c.actorId,
          kind: 'message',
          seq: c.seq,
          detail: `${where} carried another event`,
        });
      }
      delivered.add(key);
    }
    return problems;
  }
}

function matches(sent: OutgoingMessage | undefined, c: Claim): boolean {
  return sent !== undefined && sent.to === c.actorId && sent.kind === c.kind;
}
