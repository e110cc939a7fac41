/**
 * Timers a step armed after some of its messages, waiting for the courier to reach
 * their place. XState delivers a step's messages as their actions run, with the
 * receivers' own steps: what they arm is armed before a timer the step arms after
 * them, and fires first at the instant both fall due. Such a timer (its place:
 * how many of the step's messages went before it, Effects.timerPlaces) is armed
 * before the message at its place is sent, or after the step's last message.
 */
import type { OutgoingMessage } from '../store/types.ts';

/** A timer a step armed after sending `place` of its messages, and how to arm it. */
export interface TimerArm {
  readonly place: number;
  readonly arm: () => void;
}

/** One commit's messages, as the courier knows them. */
interface Commit {
  readonly from: string;
  readonly fromSeq: number;
  readonly messages: readonly OutgoingMessage[];
}

export class PlacedTimers {
  /** By message key: timers to arm before that message is sent, or after it (a commit's last). */
  private readonly before = new Map<string, Array<() => void>>();
  private readonly after = new Map<string, Array<() => void>>();

  /** `keyOf`: the courier's key of a message. */
  constructor(
    private readonly keyOf: (m: { from: string; fromSeq: number; idx: number }) => string,
  ) {}

  /** Whether any timer waits (the courier looks for none otherwise). */
  get empty(): boolean {
    return this.before.size === 0 && this.after.size === 0;
  }

  /** Notes a commit's placed timers, when it is submitted (before any of its messages can go). */
  place(commit: Commit, arms: readonly TimerArm[]): void {
    for (const { place, arm } of arms) {
      const at = this.where(commit, place);
      if (at === undefined) continue; // a step places timers only after a message
      const list = at.map.get(at.key);
      if (list === undefined) at.map.set(at.key, [arm]);
      else list.push(arm);
    }
  }

  /** The commit failed: its timers are never armed. */
  unplace(commit: Commit, arms: readonly TimerArm[]): void {
    for (const { place } of arms) {
      const at = this.where(commit, place);
      at?.map.delete(at.key);
    }
  }

  /** Takes the timers to arm before the message of `key` is sent. */
  takeBefore(key: string): Array<() => void> | undefined {
    return take(this.before, key);
  }

  /** Takes the timers to arm after the message of `key` (the last of its commit) is sent. */
  takeAfter(key: string): Array<() => void> | undefined {
    return take(this.after, key);
  }

  private where(
    commit: Commit,
    place: number,
  ): { map: Map<string, Array<() => void>>; key: string } | undefined {
    const last = commit.messages.length - 1;
    const at = commit.messages[Math.min(place, last)];
    if (at === undefined) return undefined;
    return {
      map: place > last ? this.after : this.before,
      key: this.keyOf({ from: commit.from, fromSeq: commit.fromSeq, idx: at.idx }),
    };
  }
}

function take(map: Map<string, Array<() => void>>, key: string): Array<() => void> | undefined {
  const arms = map.get(key);
  if (arms !== undefined) map.delete(key);
  return arms;
}
