// The TypeScript client's discovery rules against the language-neutral table every client is checked
// against (tests/fixtures/discovery.json; the Python and Lua suites read the same file).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const sd = require('../dist/index.js');
const TABLE = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, '..', '..', '..', 'tests', 'fixtures', 'discovery.json'), 'utf8'));
const ENV_VARS = ['SESSIONDAG_HOME', 'XDG_STATE_HOME', 'XDG_RUNTIME_DIR'];

function fill(v, tmp) {
  if (typeof v === 'string') return v.replaceAll('{tmp}', tmp).replaceAll('{uid}', String(process.getuid()));
  if (Array.isArray(v)) return v.map((x) => fill(x, tmp));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [fill(k, tmp), fill(x, tmp)]));
  return v;
}

function tmpDir() {
  return fs.mkdtempSync('/tmp/sdfx-');   // short: the short-address cases count its bytes
}

async function makePid(kind, keep) {
  if (kind === '$alive') return process.pid;
  if (kind === '$dead') return spawnSync('true').pid;
  if (kind === '$zombie') {   // sh's child exits once sh has become sleep (sh could reap it), so nobody reaps it
    const script = 'p=$$; (until read c < /proc/$p/comm && [ "$c" = sleep ]; do :; done) & echo $!; exec sleep 60';
    const p = spawn('sh', ['-c', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    keep.push(p);
    const pid = await new Promise((resolve) => p.stdout.once('data', (b) => resolve(parseInt(String(b), 10))));
    for (;;) {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
      if (stat.slice(stat.lastIndexOf(')') + 1).trim().split(/\s+/)[0] === 'Z') return pid;
      await new Promise((r) => setImmediate(r));
    }
  }
  return kind;
}

async function setUp(rawCase, tmp, keep) {
  const c = fill(rawCase, tmp);
  const env = {};
  if (process.env.HOME) env.HOME = process.env.HOME;
  for (const [k, v] of Object.entries(c.env ?? {})) {
    if (v === null) delete env[k]; else env[k] = v;
  }
  for (const d of c.mkdir ?? []) fs.mkdirSync(d, { recursive: true });
  for (const [link, target] of Object.entries(c.symlinks ?? {})) fs.symlinkSync(target, link);
  for (const [file, text] of Object.entries(c.files ?? {})) fs.writeFileSync(file, text);   // a config file: not read
  process.chdir(tmp);
  const stateDir = c.explicit ? path.resolve(c.explicit) : sd.defaultStateDir(env);
  if (c.pidfile || c.pidfile_raw !== undefined) {
    let raw = c.pidfile_raw;
    if (raw === undefined) raw = JSON.stringify({ ...c.pidfile, pid: await makePid(c.pidfile.pid, keep) });
    fs.writeFileSync(sd.pidFilePath(stateDir), raw);
  }
  return { c, env, stateDir };
}

describe('discovery: tests/fixtures/discovery.json', () => {
  const cwd = process.cwd();
  for (const raw of TABLE.cases) {
    test(raw.name, async () => {
      const tmp = tmpDir();
      const keep = [];
      try {
        const { c, env, stateDir } = await setUp(raw, tmp, keep);
        const want = c.expect;
        assert.equal(stateDir, want.state_dir);
        const got = {
          runtime_dir: sd.runtimeDir(env), socket: sd.socketFor(stateDir, env),
          log: sd.daemonLogPath(stateDir), pidfile: sd.pidFilePath(stateDir),
        };
        for (const k of ['runtime_dir', 'socket', 'log', 'pidfile']) {
          if (k in want) assert.equal(got[k], want[k], k);
        }
        assert.equal(sd.candidateSockets(stateDir, env)[0], got.socket);   // what connect() tries first
        if (want.default_socket) assert.equal(got.socket, sd.defaultSocketPath(stateDir, env));
        if (want.same_socket_as) assert.equal(got.socket, sd.defaultSocketPath(want.same_socket_as, env));
        if ('pid_alive' in want) {
          assert.equal(sd.pidAlive(JSON.parse(fs.readFileSync(got.pidfile, 'utf8')).pid), want.pid_alive);
        }
      } finally {
        process.chdir(cwd);
        for (const p of keep) p.kill('SIGKILL');
        fs.rmSync(tmp, { recursive: true, force: true });
      }
    });
  }

  for (const c of TABLE.short_address) {
    test(`short address: ${c.name}`, () => {
      const tmp = tmpDir();
      try {
        const base = Buffer.from(tmp + '/');
        const file = Buffer.from('/' + c.file);
        const unit = Buffer.from(c.dir_fill);
        const room = c.total_bytes - base.length - file.length;
        const dir = Buffer.concat([Buffer.alloc(Math.floor(room / unit.length) * unit.length, unit)]);
        const d = Buffer.concat([dir, Buffer.alloc(room - dir.length, 'x')]);
        fs.mkdirSync(Buffer.concat([base, d]).toString(), { recursive: true });
        const p = Buffer.concat([base, d, file]).toString();
        assert.equal(Buffer.byteLength(p), c.total_bytes);
        if (c.address === 'error') {
          assert.throws(() => sd.shortAddress(p), /too long/);
          return;
        }
        const a = sd.shortAddress(p);
        try {
          if (c.address === 'direct') assert.equal(a.address, p);
          else {
            assert.match(a.address, new RegExp(`^/proc/self/fd/\\d+/${c.file.replace(/[.]/g, '\\.')}$`));
            assert.equal(fs.realpathSync(path.dirname(a.address)), fs.realpathSync(path.dirname(p)));
          }
        } finally {
          a.close();
        }
      } finally {
        fs.rmSync(tmp, { recursive: true, force: true });
      }
    });
  }
});

