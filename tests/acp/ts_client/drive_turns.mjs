// Drives `sessiondag acp` with the official TypeScript ACP client (@agentclientprotocol/sdk) through
// what a turn can stream besides text: thought chunks, plan updates, and run_command in a terminal
// this client owns (terminal/*: real processes), including a cancel while that terminal runs.
// Prints one JSON report on stdout; tests/acp/test_ts_client_turns.py checks it.
// usage: node drive_turns.mjs '{"cmd": [...], "cwd": "/abs/work", "stderr": "/abs/log"}'
import { spawn } from "node:child_process";
import fs from "node:fs";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const cfg = JSON.parse(process.argv[2]);
const err = fs.openSync(cfg.stderr, "a");
const child = spawn(cfg.cmd[0], cfg.cmd.slice(1), { stdio: ["pipe", "pipe", err], env: process.env });
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const report = { updates: [], permissions: [], terminals: [] };
const live = new Map();   // terminalId -> {proc, out, exited, record}
let nextId = 1;
let onOutput = null;      // (terminal record) => void, called as a terminal's output grows

// A terminal as an editor keeps one: its own process group, stdout and stderr merged, the output
// kept up to outputByteLimit (the end of it, as the spec says).
function createTerminal(p) {
  const terminalId = `ts-term-${nextId++}`;
  const proc = spawn(p.command, p.args ?? [], { cwd: p.cwd ?? undefined, detached: true,
                                                 stdio: ["ignore", "pipe", "pipe"] });
  const record = { terminalId, command: p.command, args: p.args ?? [], cwd: p.cwd ?? null, pid: proc.pid,
                   limit: p.outputByteLimit ?? null, killed: false, released: false, exit: null,
                   exitedBeforeRelease: null };
  const t = { proc, out: Buffer.alloc(0), truncated: false, record };
  t.exited = new Promise((resolve) => proc.on("close", (code, signal) => {
    record.exit = { exitCode: code, signal };
    resolve(record.exit);
  }));
  const take = (chunk) => {
    t.out = Buffer.concat([t.out, chunk]);
    if (record.limit !== null && t.out.length > record.limit) {
      t.out = t.out.subarray(t.out.length - record.limit);
      t.truncated = true;
    }
    if (onOutput) onOutput(t);
  };
  proc.stdout.on("data", take);
  proc.stderr.on("data", take);
  live.set(terminalId, t);
  report.terminals.push(record);
  return { terminalId };
}

function killGroup(t) {
  if (t.record.exit === null) {
    try { process.kill(-t.proc.pid, "SIGKILL"); } catch { /* already gone */ }
  }
}

const app = client({ name: "sessiondag-ts-test" })
  .onNotification(methods.client.session.update, (ctx) => { report.updates.push(ctx.params); })
  .onRequest(methods.client.session.requestPermission, (ctx) => {
    report.permissions.push(ctx.params);
    return { outcome: { outcome: "selected", optionId: "allow_always" } };
  })
  .onRequest(methods.client.terminal.create, (ctx) => createTerminal(ctx.params))
  .onRequest(methods.client.terminal.output, (ctx) => {
    const t = live.get(ctx.params.terminalId);
    return { output: t.out.toString("utf8"), truncated: t.truncated, exitStatus: t.record.exit };
  })
  .onRequest(methods.client.terminal.waitForExit, async (ctx) => await live.get(ctx.params.terminalId).exited)
  .onRequest(methods.client.terminal.kill, (ctx) => {
    const t = live.get(ctx.params.terminalId);
    t.record.killed = true;
    killGroup(t);
    return {};
  })
  .onRequest(methods.client.terminal.release, async (ctx) => {
    const t = live.get(ctx.params.terminalId);
    t.record.released = true;
    t.record.exitedBeforeRelease = t.record.exit !== null;
    killGroup(t);   // releasing a running command kills it
    await t.exited;
    live.delete(ctx.params.terminalId);
    return {};
  });

const mark = () => report.updates.length;

await app.connectWith(stream, async (ctx) => {
  report.init = await ctx.request(methods.agent.initialize, {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: true },
    clientInfo: { name: "sessiondag-ts-test", version: "0" },
  });
  const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: cfg.cwd, mcpServers: [] });
  report.sessionId = sessionId;
  const prompt = async (name, t) => {
    const from = mark();
    const res = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: t }] });
    report[name] = { from, to: mark(), res };
  };
  await prompt("think", "hello");            // reasoning deltas from the loopback model server
  await prompt("plan", "make a plan");       // update_plan twice
  await prompt("run", "run it");             // run_command in this client's terminal
  await prompt("escape", "escape");          // a write outside the working dir: the sandbox refuses it
  await prompt("slow", "sleep");             // over its timeout: killed

  // a cancel while this client's terminal runs the command: once the command has started
  const started = new Promise((resolve) => {
    onOutput = (t) => { if (t.out.toString("utf8").includes("started")) resolve(t.record); };
  });
  const from = mark();
  const waiting = ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "hang" }] });
  const hung = await started;
  onOutput = null;
  await ctx.notify(methods.agent.session.cancel, { sessionId });
  report.hang = { from, res: await waiting, terminalId: hung.terminalId };
  report.hang.to = mark();
  await prompt("after", "after the cancel");

  const loadFrom = mark();
  await ctx.request(methods.agent.session.load, { sessionId, cwd: cfg.cwd, mcpServers: [] });
  report.load = { from: loadFrom, to: mark() };
});
child.stdin.end();
await new Promise((resolve) => child.on("exit", resolve));
report.exitCode = child.exitCode;
process.stdout.write(JSON.stringify(report) + "\n");
