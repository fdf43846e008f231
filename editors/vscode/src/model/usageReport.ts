// The usage breakdown as markdown (no vscode import): one table per grouping of session/usage —
// branch (each branch's own spend since its fork), sub-agent, model, turn — each ending in the total.
import { costText, shortId } from './treeModel';

export interface UsageRow {
  key: string | null; calls: number; input_tokens: number; output_tokens: number; cached_tokens: number;
  reasoning_tokens: number; latency_ms: number; cost_usd: number | null; priced_cost_usd: number;
  head_id?: string | null; name?: string | null; model?: string | null; seq?: number | null;
}
export interface UsageResult { by: string; rows: UsageRow[]; total: UsageRow | Omit<UsageRow, 'key'> }

const TITLES: Record<string, string> = { branch: 'By branch (own spend since its fork)', subagent: 'By sub-agent',
  model: 'By model', turn: 'By turn' };

function label(by: string, r: UsageRow): string {
  if (by === 'branch') return `${r.head_id ? shortId(r.head_id) : '(detached)'}${r.name ? ` ${r.name}` : ''}`;
  if (by === 'subagent') return r.key === null ? '(main agent)' : `${shortId(r.key)}${r.name ? ` ${r.name}` : ''}`;
  if (by === 'turn') return r.key === null ? '(before the first turn)' : `#${r.seq ?? '?'} ${shortId(r.key)}`;
  return String(r.key);
}

function line(cells: (string | number)[]): string { return `| ${cells.join(' | ')} |`; }

function cells(name: string, t: Omit<UsageRow, 'key'>): (string | number)[] {
  return [name, t.calls, t.input_tokens, t.cached_tokens, t.output_tokens, t.reasoning_tokens,
    `${(t.latency_ms / 1000).toFixed(1)} s`, costText(t) ?? '-'];
}

export function usageMarkdown(sessionId: string, results: UsageResult[]): string {
  const out = [`# Usage of ${sessionId}`, ''];
  for (const r of results) {
    out.push(`## ${TITLES[r.by] ?? r.by}`, '', line(['', 'calls', 'input', 'cached', 'output', 'reasoning', 'latency', 'cost']),
      line(Array(8).fill('---')));
    for (const row of r.rows) out.push(line(cells(label(r.by, row), row)));
    out.push(line(cells('**TOTAL**', r.total)), '');
  }
  out.push('Costs: `unknown` when the model has no price, `$X+?` when only some calls have one (docs/usage.md).', '');
  return out.join('\n');
}
