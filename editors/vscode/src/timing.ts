// Timing lines in the sessiondag output channel ("timing {json}"), read by bench/vscode_bench.mjs.
import type * as vscode from 'vscode';

let channel: vscode.OutputChannel | undefined;
export const activatedAt = Date.now();

export function setTimingChannel(c: vscode.OutputChannel): void { channel = c; }

export function timing(what: string, data: Record<string, number | string>): void {
  channel?.appendLine(`timing ${JSON.stringify({ what, ...data })}`);
}
