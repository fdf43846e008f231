// The error classes are the schema's (rpc_schema/openrpc.json components/errors): a typed kind's class is
// named by its data's `title` and extends the class of its `x-parent`, as the Python client's are; a
// real daemon's error arrives as that class.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { repoRoot, startDaemon, tempDir } from './helpers.mjs';

const require = createRequire(import.meta.url);
const sd = require('../dist/index.js');
const errors = JSON.parse(fs.readFileSync(path.join(repoRoot, 'rpc_schema', 'openrpc.json'), 'utf8')).components.errors;
const typed = Object.entries(errors).filter(([, e]) => e.data && e.data.title);

describe('error classes', () => {
  test('every typed kind is the class its schema names, under its x-parent', () => {
    assert.ok(typed.length > 30);
    for (const [kind, e] of typed) {
      const cls = sd[e.data.title];
      assert.equal(typeof cls, 'function', `${kind}: no class ${e.data.title}`);
      assert.equal(sd.ERROR_BY_KIND[kind], cls, kind);
      assert.equal(sd.ERROR_BY_CODE[e.code], cls, kind);
      assert.equal(cls.code, e.code, kind);
      const parent = e.data['x-parent'] ? sd[errors[e.data['x-parent']].data.title] : sd.SessionDagRpcError;
      assert.equal(Object.getPrototypeOf(cls), parent, `${kind}: ${e.data.title} extends ${parent.name}`);
    }
    assert.equal(sd.SyncUnreachableError, undefined);   // the schema's name is RemoteUnreachableError
  });

  test('a standard JSON-RPC error is its PascalCase name', () => {
    for (const [name, e] of Object.entries(errors).filter(([, e]) => !(e.data && e.data.title))) {
      const cls = sd.ERROR_BY_CODE[e.code];
      assert.match(cls.name, /Error$/, name);
      assert.equal(Object.getPrototypeOf(cls), sd.SessionDagRpcError, name);
    }
    assert.equal(sd.ERROR_BY_CODE[-32602], sd.InvalidParamsError);
  });

  test('typedError picks the most specific class (by kind, then by code)', () => {
    const { ResponseError } = require('vscode-jsonrpc/node');
    const e = sd.typedError(new ResponseError(-32031, 'full', { kind: 'storage_full', path: '/x' }));
    assert.ok(e instanceof sd.StorageFullError && e instanceof sd.StorageError && e instanceof sd.SessionDagError);
    assert.equal(e.name, 'StorageFullError');
    assert.ok(sd.typedError(new ResponseError(-32051, 'down')) instanceof sd.RemoteUnreachableError);
    const unknown = sd.typedError(new ResponseError(-32010, 'new kind', { kind: 'from_a_newer_daemon' }));
    assert.equal(unknown.constructor, sd.SessionDagError);
  });
});

describe('error classes from a real daemon', () => {
  let d, c, work;
  before(async () => {
    d = await startDaemon();
    work = tempDir('sd-ts-work-');
    c = await sd.connect({ socket: d.socket, clientName: 'ts-errors' });
  });
  after(async () => {
    await c?.close();
    assert.equal(await d.stop(), 0);
  });

  test('an unreachable remote is a RemoteUnreachableError, a SyncError, a SessionDagError', async () => {
    const h = await c.sessionOpen({ working_dir: work });
    await c.sessionAppend({ session_id: h.session_id, node: { role: 'user', name: 'me', output: 'hi', predecessor: 'ROOT' } });
    await c.sessionCommit({ session_id: h.session_id });
    const url = path.join(d.root, 'no-such.git');
    await assert.rejects(c.sessionPush({ session_id: h.session_id, remote: url }), (e) =>
      e instanceof sd.RemoteUnreachableError && e instanceof sd.SyncError && e instanceof sd.SessionDagError
      && e instanceof sd.SessionDagRpcError && e.kind === 'sync_unreachable' && e.code === -32051
      && e.name === 'RemoteUnreachableError');
    await assert.rejects(c.sessionGetNode({ session_id: h.session_id, node_id: 'nope' }), (e) =>
      e instanceof sd.NotFoundError && e instanceof sd.SessionDagError && !(e instanceof sd.SyncError));
  });
});
