/**
 * Ids grouped by the credential they count against, oldest first: what lets
 * sessions and stream tickets be bounded per credential, a credential past its
 * bound losing its own oldest, never another's.
 */
export class ByCredential {
  private readonly groups = new Map<string, Set<string>>();

  add(credential: string, id: string): void {
    const group = this.groups.get(credential) ?? new Set<string>();
    group.add(id);
    this.groups.set(credential, group);
  }

  delete(credential: string, id: string): void {
    const group = this.groups.get(credential);
    group?.delete(id);
    if (group?.size === 0) this.groups.delete(credential);
  }

  /** The credential's ids beyond the newest `keep - 1`, oldest first: what must go to add one more. */
  overflow(credential: string, keep: number): string[] {
    const group = this.groups.get(credential);
    const excess = (group?.size ?? 0) - keep + 1;
    const out: string[] = [];
    for (const id of group ?? []) {
      if (out.length >= excess) break;
      out.push(id);
    }
    return out;
  }

  /** The credential's ids, oldest first. */
  of(credential: string): string[] {
    return [...(this.groups.get(credential) ?? [])];
  }
}
