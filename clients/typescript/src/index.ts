// sessiondag-client: a TypeScript client of the sessiondag daemon. The protocol types and typed methods
// are generated from rpc_schema/ (src/generated/protocol.ts).
export * from './generated/protocol';
export { SessionDagClient, DEFAULT_TIMEOUT } from './client';
export { connect, connectSocket, clientOverSocket, spawnStdio, startDaemon, ConnectOptions, StartedDaemon } from './connect';
export {
  defaultStateDir, defaultSocketPath, runtimeDir, stateKey, readPidFile, candidateSockets, daemonLogPath, realpathLoose,
  pidAlive, pidFilePath, socketFor, shortAddress, SUN_PATH_MAX,
} from './discovery';
export { ConnectionClosedError, DaemonNotResponding, DaemonStartError, typedError } from './errors';
export { CancellationTokenSource } from 'vscode-jsonrpc/node';
