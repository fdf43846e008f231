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

/** The daemon answered nothing within `timeout` seconds, not even `daemon/ping` (stopped, stuck). */
export class DaemonNotResponding extends Error {
  constructor(readonly method: string, readonly timeout: number, readonly pid?: number) {
    super(`the sessiondag daemon${pid !== undefined ? ` (pid ${pid})` : ''} did not answer ${method} within ${timeout} s`
      + (pid !== undefined ? ` (stopped or stuck? check it with: ps -o stat= -p ${pid})` : ' (stopped or stuck?)'));
    this.name = 'DaemonNotResponding';
  }
}

/** A JSON-RPC error → its typed class: data.kind first, then the code, else SessionDagRpcError. */
export function typedError(e: unknown): unknown {
  if (!(e instanceof ResponseError)) return e;
  const data = e.data as { kind?: unknown } | undefined;
  const kind = data && typeof data.kind === 'string' ? data.kind : undefined;
  const cls = (kind !== undefined && ERROR_BY_KIND[kind]) || ERROR_BY_CODE[e.code] || SessionDagRpcError;
  return new cls(e.code, e.message, e.data);
}
