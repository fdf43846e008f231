// A branch of the Sessions view, read a page at a time (no vscode import): the newest `pageSize` nodes
// first (session/get_branch {limit, order: "desc"}), older pages on demand (`before`: the cursor the last
// page returned), all pinned to the head the first page was cut from, so that appends meanwhile do not
// shift the window. A big session shows its tail at once; "load older" rows fetch the rest.
import type { Call, SessionGetBranchParams, SessionGetBranchResult } from 'sessiondag-client';

export type PageQuery = Omit<SessionGetBranchParams, 'session_id'>;
export type FetchPage = (q: PageQuery) => Promise<SessionGetBranchResult>;

export class BranchPager {
  /** The loaded tail of the branch, in branch order (start → head). */
  nodes: Call[] = [];
  /** Nodes on the whole branch. */
  total = 0;
  private cursor: string | null = null;
  private pinned?: string;

  constructor(readonly headId: string, readonly pageSize: number) {
    if (!(pageSize >= 1)) throw new RangeError(`page size must be at least 1, not ${pageSize}`);
  }

  /** Nodes before the loaded tail. */
  get older(): number { return this.cursor === null ? 0 : Math.max(0, this.total - this.nodes.length); }

  get hasOlder(): boolean { return this.cursor !== null; }

  /** (Re)load the newest `want` nodes (at least a page): a refresh keeps what the user had loaded. */
  async loadNewest(fetch: FetchPage, want = this.pageSize): Promise<void> {
    const r = await fetch({ head_id: this.headId, limit: Math.max(this.pageSize, want), order: 'desc' });
    this.nodes = [...r.nodes].reverse();
    this.cursor = r.next_cursor ?? null;
    this.total = r.total ?? r.nodes.length;
    this.pinned = r.head_id ?? this.headId;
  }

  /** The next older page; returns how many nodes it added (0 at the branch start). */
  async loadOlder(fetch: FetchPage): Promise<number> {
    if (this.cursor === null) return 0;
    const r = await fetch({ head_id: this.pinned ?? this.headId, before: this.cursor, limit: this.pageSize, order: 'desc' });
    this.nodes = [...r.nodes].reverse().concat(this.nodes);
    this.cursor = r.next_cursor ?? null;
    return r.nodes.length;
  }

  /** Load older pages until `nodeId` is loaded (or the branch start); true when it is. */
  async loadUntil(fetch: FetchPage, nodeId: string): Promise<boolean> {
    while (!this.nodes.some((n) => n.id === nodeId)) {
      if ((await this.loadOlder(fetch)) === 0) return false;
    }
    return true;
  }
}
