// The chat of one branch as data (no vscode import): user turns, model replies, tool calls with their
// results, sub-agents (spawn_agent calls and what they attached), errors and the files a turn wrote.
// Built from get_branch nodes and kept up to date by applying agent/did_update and did_change nodes.
import type { Call, SessionChange } from 'sessiondag-client';

export interface ChatTool { id: string; name: string; status: Call['status']; input: unknown; output: unknown }
export interface ChatSubAgent { id: string; task: string; status: string; result: string; branchRoot?: string }
export interface ChatItem {
  id: string;
  seq: number;
  kind: 'user' | 'assistant' | 'followup';
  status: Call['status'];
  text: string;
  tools: ChatTool[];
  subagents: ChatSubAgent[];
  changes: { path: string; change: string }[];
  error?: string;
}

/** The name of a compaction's summary node (context/compaction.py). */
const SUMMARY_NAME = 'context/summary';

const str = (v: unknown): string => (typeof v === 'string' ? v : v == null ? '' : JSON.stringify(v, null, 1));

/** The caller chain of an id, used to hang a tool call on the model call that made it. */
function ownerLlm(n: Call, byId: Map<string, Call>): string | undefined {
  let cur: Call | undefined = n;
  for (let i = 0; cur && i < 64; i++) {
    const c = byId.get(cur.caller);
    if (!c) return undefined;
    if (c.role === 'llm') return c.id;
    cur = c;
  }
  return undefined;
}

export class ChatModel {
  private readonly nodes = new Map<string, Call>();
  private readonly streaming = new Map<string, string>(); // llm id → text streamed so far

  constructor(nodes: Call[] = []) { for (const n of nodes) this.nodes.set(n.id, n); }

  /** Add or replace a node (node_appended / node_updated / tool_call / did_change append). A compaction's
   * summary is not a message of the branch: it stands beside the run it covers (its predecessor is the run's,
   * HEAD stays put), so get_branch never gives it. Taken from its did_change it showed as a reply of the
   * agent until the next reload took it away, and with it a note that followed it (a refused prompt's error). */
  upsert(n: Call): void {
    if (n.name === SUMMARY_NAME) return;
    this.nodes.set(n.id, n);
    if (n.role === 'llm' && n.status !== 'running') this.streaming.delete(n.id);
  }

  /** A text_delta for a running model call. */
  delta(nodeId: string, text: string): void {
    this.streaming.set(nodeId, (this.streaming.get(nodeId) ?? '') + text);
  }

  /** A did_change {kind: update} of a node this chat shows. */
  patch(id: string, fields: { output?: unknown; status?: string; metadata?: Record<string, unknown> }): void {
    const n = this.nodes.get(id);
    if (!n) return;
    const next: Call = { ...n, metadata: { ...n.metadata, ...(fields.metadata ?? {}) } };
    if ('output' in fields) next.output = fields.output;
    if (fields.status) next.status = fields.status as Call['status'];
    this.upsert(next);
  }

  /** The appends and updates of a session/did_change (other kinds are the caller's: a reload, a checkout). */
  apply(changes: SessionChange[]): void {
    for (const ch of changes) {
      if (ch.kind === 'append') this.upsert(ch.node);
      else if (ch.kind === 'update') this.patch(ch.node_id, ch.fields);
    }
  }

  has(id: string): boolean { return this.nodes.has(id); }

  items(): ChatItem[] {
    const byId = this.nodes;
    const out: ChatItem[] = [];
    const llmItems = new Map<string, ChatItem>();
    const sorted = [...byId.values()].sort((a, b) => a.seq - b.seq);
    for (const n of sorted) {
      if (n.role === 'user' && n.caller === 'ROOT') {
        const followup = (n.metadata as { source?: string }).source === 'task_followup';
        out.push({
          id: n.id, seq: n.seq, kind: followup ? 'followup' : 'user', status: n.status, text: str(n.output),
          tools: [], subagents: [], changes: (n.metadata.workspace_changes ?? []) as ChatItem['changes'],
        });
      } else if (n.role === 'llm' && byId.get(n.caller)?.caller === 'ROOT' || (n.role === 'llm' && n.caller === 'ROOT')) {
        const text = n.status === 'running' ? (this.streaming.get(n.id) ?? '') : str(n.output);
        const it: ChatItem = {
          id: n.id, seq: n.seq, kind: 'assistant', status: n.status, text, tools: [], subagents: [], changes: [],
          error: n.status === 'error' ? errorText(n) : undefined,
        };
        llmItems.set(n.id, it);
        out.push(it);
      } else if (n.role === 'code' && (n.metadata as { tool_call_id?: string }).tool_call_id !== undefined) {
        const owner = llmItems.get(ownerLlm(n, byId) ?? '');
        if (!owner) continue;
        owner.tools.push({ id: n.id, name: n.name, status: n.status, input: n.input, output: n.output });
        if (n.name === 'spawn_agent') {
          const att = (n.metadata as { attached?: { status?: string; result?: string; branch_root?: string } }).attached;
          const task = (n.input as { task?: string } | null)?.task ?? '';
          owner.subagents.push({
            id: n.id, task, status: att?.status ?? (n.status === 'completed' ? 'running' : n.status),
            result: att?.result ?? '', branchRoot: att?.branch_root,
          });
        }
      }
    }
    return out;
  }
}

export function errorText(n: Call): string {
  const m = n.metadata as { error?: { type?: string; message?: string } };
  if (m.error && (m.error.type || m.error.message)) return `${m.error.type ?? 'error'}: ${m.error.message ?? ''}`;
  return str(n.output) || 'error';
}
