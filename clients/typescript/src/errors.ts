import { ResponseError } from 'vscode-jsonrpc/node';
import { ERROR_BY_CODE, ERROR_BY_KIND, SessionDagRpcError } from './generated/protocol';

/** The connection to the daemon closed (or could not be made). */
export class ConnectionClosedError extends Error {
  constructor(message: string) { super(message); this.name = 'ConnectionClosedError'; }
}

/** Auto-start failed: the daemon exited or did not become ready in time (message has its log tail). */
export class DaemonStartError extends Error {
  constructor(message: string) { super(message); this.name = 'DaemonStartError'; }
}

/** A JSON-RPC error → its typed class: data.kind first, then the code, else SessionDagRpcError. */
export function typedError(e: unknown): unknown {
  if (!(e instanceof ResponseError)) return e;
  const data = e.data as { kind?: unknown } | undefined;
  const kind = data && typeof data.kind === 'string' ? data.kind : undefined;
  const cls = (kind !== undefined && ERROR_BY_KIND[kind]) || ERROR_BY_CODE[e.code] || SessionDagRpcError;
  return new cls(e.code, e.message, e.data);
}
