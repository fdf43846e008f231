// A snapshot read while notifications keep coming (no vscode import). The daemon answers a read such as
// session/get_branch from a worker thread, so the answer can hold the state from before a change whose
// session/did_change reached the client first; a view that installs that snapshot as it is has applied
// the change to the model it threw away, and loses it for good (a reply that stays "running…").
// Each read opens a window: the changes heard while it is under way are kept, for the caller to apply
// again on top of the snapshot. Applying a change the snapshot already holds sets what it holds.
export class HeardDuring<C> {
  private readonly windows = new Set<C[]>();

  /** Run `read`; its result and, in order, what `hear` got while it was under way. */
  async read<T>(read: () => Promise<T>): Promise<{ value: T; heard: C[] }> {
    const heard: C[] = [];
    this.windows.add(heard);
    try {
      return { value: await read(), heard };
    } finally {
      this.windows.delete(heard);
    }
  }

  /** A change as it arrives (kept by every read under way). */
  hear(change: C): void {
    for (const w of this.windows) w.push(change);
  }
}
