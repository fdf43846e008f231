// Drives `sessiondag acp` with the official TypeScript ACP client (@agentclientprotocol/sdk) over
// real pipes and prints one JSON report on stdout; tests/acp/test_ts_client.py checks it.
// usage: node drive.mjs '{"cmd": [...], "cwd": "/abs/work", "stderr": "/abs/log"}'
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const cfg = JSON.parse(process.argv[2]);
const err = fs.openSync(cfg.stderr, "a");
const child = spawn(cfg.cmd[0], cfg.cmd.slice(1), { stdio: ["pipe", "pipe", err], env: process.env });
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const report = { updates: [], permissions: [], fsReads: [], fsWrites: [], errors: {} };
let permissionAnswer = "reject_once";
let onChunk = null;
const buffers = { [path.join(cfg.cwd, "notes.txt")]: "buffer from the ts client\n" };

const app = client({ name: "sessiondag-ts-test" })
  .onNotification(methods.client.session.update, (ctx) => {
    report.updates.push(ctx.params);
    if (ctx.params.update.sessionUpdate === "agent_message_chunk" && onChunk) onChunk();
  })
  .onRequest(methods.client.session.requestPermission, (ctx) => {
    report.permissions.push(ctx.params);
    return { outcome: { outcome: "selected", optionId: permissionAnswer } };
  })
  .onRequest(methods.client.fs.readTextFile, (ctx) => {
    report.fsReads.push(ctx.params.path);
    const text = buffers[ctx.params.path] ?? fs.readFileSync(ctx.params.path, "utf8");
    return { content: text };
  })
  .onRequest(methods.client.fs.writeTextFile, (ctx) => {
    report.fsWrites.push([ctx.params.path, ctx.params.content]);
    fs.writeFileSync(ctx.params.path, ctx.params.content);
    return {};
  });

async function expectError(name, op) {
  try {
    await op();
    report.errors[name] = null;
  } catch (e) {
    report.errors[name] = { code: e.code, data: e.data ?? null };
  }
}

const mark = () => report.updates.length;

await app.connectWith(stream, async (ctx) => {
  report.init = await ctx.request(methods.agent.initialize, {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
    clientInfo: { name: "sessiondag-ts-test", version: "0" },
  });
  report.newRes = await ctx.request(methods.agent.session.new, { cwd: cfg.cwd, mcpServers: [] });
  const { sessionId } = report.newRes;
  report.sessionId = sessionId;
  const text = (t) => [{ type: "text", text: t }];

  report.hello = { from: mark(), res: await ctx.request(methods.agent.session.prompt, { sessionId, prompt: text("hello") }) };
  report.hello.to = mark();

  permissionAnswer = "reject_once";
  report.refused = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: text("write it") });
  permissionAnswer = "allow_once";
  report.granted = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: text("write it") });
  report.read = { from: mark(), res: await ctx.request(methods.agent.session.prompt, { sessionId, prompt: text("read the notes") }) };
  report.read.to = mark();

  const firstChunk = new Promise((resolve) => { onChunk = resolve; });
  const waiting = ctx.request(methods.agent.session.prompt, { sessionId, prompt: text("wait for it") });
  await firstChunk;
  onChunk = null;
  await ctx.notify(methods.agent.session.cancel, { sessionId });
  report.cancelled = await waiting;

  // modes, the model config option, a slash command
  await ctx.request(methods.agent.session.setMode, { sessionId, modeId: "plan" });
  const asked = report.permissions.length;
  report.planned = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: text("write it") });
  report.planAsked = report.permissions.length - asked;
  await ctx.request(methods.agent.session.setMode, { sessionId, modeId: "ask" });
  report.config = await ctx.request(methods.agent.session.setConfigOption, { sessionId, configId: "model", value: "default" });
  report.usage = { from: mark(), res: await ctx.request(methods.agent.session.prompt, { sessionId, prompt: text("/usage") }) };
  report.usage.to = mark();

  // an MCP server offered in session/new, used in a turn; then the session is deleted
  const mcp = await ctx.request(methods.agent.session.new, {
    cwd: cfg.cwd, mcpServers: [{ name: "t", command: cfg.mcp[0], args: cfg.mcp.slice(1), env: [] }] });
  permissionAnswer = "allow_once";
  report.mcp = { sessionId: mcp.sessionId, from: mark(),
    res: await ctx.request(methods.agent.session.prompt, { sessionId: mcp.sessionId, prompt: text("echo please") }) };
  report.mcp.to = mark();
  report.deleted = await ctx.request(methods.agent.session.delete, { sessionId: mcp.sessionId });

  report.list = await ctx.request(methods.agent.session.list, { cwd: cfg.cwd });
  report.branches = await ctx.request("_sessiondag/list_branches", { sessionId });

  await expectError("unknownSession", () => ctx.request(methods.agent.session.prompt, { sessionId: "s-nope", prompt: text("x") }));
  await expectError("unknownMethod", () => ctx.request("session/teleport", {}));
  await expectError("relativeCwd", () => ctx.request(methods.agent.session.new, { cwd: "relative", mcpServers: [] }));
  await expectError("mismatch", () => ctx.request(methods.agent.session.load, { sessionId, cwd: cfg.otherCwd, mcpServers: [] }));

  await ctx.request(methods.agent.session.close, { sessionId });
  let from = mark();
  await ctx.request(methods.agent.session.resume, { sessionId, cwd: cfg.cwd, mcpServers: [] });
  report.resume = { from, to: mark() };
  from = mark();
  await ctx.request(methods.agent.session.load, { sessionId, cwd: cfg.cwd, mcpServers: [] });
  report.load = { from, to: mark() };

  // session/fork (unstable in this SDK): a new session on a branch of the same one
  report.fork = await ctx.request("session/fork", { sessionId, cwd: cfg.cwd, mcpServers: [] });   // not in the stable method table
  from = mark();
  report.fork.res = await ctx.request(methods.agent.session.prompt,
    { sessionId: report.fork.sessionId, prompt: text("in the fork") });
  report.fork.from = from;
  report.fork.to = mark();
});
child.stdin.end();
await new Promise((resolve) => child.on("exit", resolve));
report.exitCode = child.exitCode;
process.stdout.write(JSON.stringify(report) + "\n");
