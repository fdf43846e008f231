-- Pure parts: the chat model (rows, streaming, folds) and the branch tree model.
local H = require("harness")
H.run(function()
  local cm = require("sessiondag.chat_model")
  local tm = require("sessiondag.tree_model")

  -- chat model from a view, then a streamed turn with a tool call and a sub-agent
  local m = cm.from_view({
    { id = "u1", seq = 2, role = "user", name = "user", status = "completed", text = "hi", calls = {} },
    { id = "l1", seq = 3, role = "llm", name = "m", status = "completed", text = "hello\nthere",
      calls = { { id = "c1", name = "read_file", status = "completed" } } },
  }, { { id = "u1", role = "user", metadata = { workspace_changes = { { path = "a.txt", change = "added" } } } } })
  local lines, levels, meta = cm.render(m)
  H.eq(lines, { "## You", "hi", "  ✎ added a.txt", "", "## Assistant (m)", "hello", "there",
                "  ▸ tool read_file", "    id c1", "" }, "rendered lines")
  H.eq(levels, { "0", "0", "0", "0", "0", "0", "0", ">1", "1", "0" }, "fold levels: a call is a fold")
  H.eq(meta[3].change, { path = "a.txt", change = "added" }, "change meta")
  H.eq(meta[8].call, "c1", "call meta")

  H.eq(cm.apply(m, { kind = "node_appended", node = { id = "u2", role = "user", caller = "ROOT", name = "user",
                                                       status = "completed", output = "go" } }), 3, "user row")
  H.eq(cm.apply(m, { kind = "node_appended", node = { id = "l2", role = "llm", caller = "u2", name = "m",
                                                       status = "running" } }), 4, "llm row")
  H.eq(cm.apply(m, { kind = "text_delta", node_id = "l2", delta = "par" }), 4, "delta")
  cm.apply(m, { kind = "text_delta", node_id = "l2", delta = "tial" })
  H.eq(m.rows[4].text, "partial", "deltas accumulate")
  H.eq(cm.apply(m, { kind = "node_appended", node = { id = "s1", role = "code", caller = "l2", name = "spawn_agent",
                                                       status = "running", input = { task = "t" } } }), 4, "call")
  H.eq(cm.apply(m, { kind = "node_appended", node = { id = "s2", role = "llm", caller = "s1", name = "m",
                                                       status = "running" } }), 4, "nested call under sub-agent")
  H.eq(cm.apply(m, { kind = "node_appended", node = { id = "x", role = "code", caller = "ROOT",
                                                       name = "context/system_prompt" } }), nil, "context hidden")
  H.eq(cm.apply(m, { kind = "node_updated", node = { id = "l2", status = "completed", output = "final" } }), 4)
  local l4, lv4 = cm.render_row(m.rows[4])
  H.eq(l4, { "## Assistant (m)", "final", "  ▸ sub-agent spawn_agent · running…", '    in:  {"task":"t"}',
             "    ▸ model m · running…", "      id s2", "" }, "row with a sub-agent fold")
  H.eq(lv4, { "0", "0", ">1", "1", ">2", "2", "0" }, "nested fold levels")
  -- details from the branch's nodes fill a call seen only in a view (no arguments yet)
  local v = cm.from_view({ { id = "l9", role = "llm", name = "m", status = "completed", text = "",
                             calls = { { id = "c9", name = "grep", status = "completed" } } } },
    { { id = "c9", role = "code", input = { q = 1 }, output = "hit" } })
  H.eq(cm.render_row(v.rows[1])[4], '    in:  {"q":1}', "call arguments from the nodes")
  H.eq(require("sessiondag.chat_view").fold_ranges(lv4, 10), { { 13, 16, 1 }, { 15, 16, 2 } }, "fold ranges, outer first")
  H.eq(require("sessiondag.chat_view").fold_ranges({ ">1", "1", ">1", "0", ">1" }, 0), { { 1, 2, 1 }, { 3, 3, 1 }, { 5, 5, 1 } },
    "sibling folds")

  -- tree model: main with two turns, a fork at the second turn, a spawn branch off main's tool call
  local function n(id, role, caller, seq, status, out)
    return { id = id, role = role, caller = caller, seq = seq, status = status or "completed", output = out }
  end
  local main = { n("sp", "code", "ROOT", 1), n("u1", "user", "ROOT", 2, nil, "one"), n("l1", "llm", "u1", 3),
                 n("t1", "code", "l1", 4), n("l1b", "llm", "u1", 5), n("u2", "user", "ROOT", 6, nil, "two"),
                 n("l2", "llm", "u2", 7) }
  local fork = { main[1], main[2], main[3], main[4], main[5], n("u3", "user", "ROOT", 8, nil, "three"),
                 n("l3", "llm", "u3", 9, "error") }
  local spawn = { n("r", "user", "t1", 10, nil, "sub task"), n("ls", "llm", "r", 11) }
  local entries = tm.build({
    { head_id = "l3", name = nil, main = false, current = true, spawn_root = nil, status = "error", seq = 9,
      label = "three", from_turn = 1, turns = 2 },
    { head_id = "l2", name = nil, main = true, current = false, spawn_root = nil, status = "completed", seq = 7,
      label = "main", from_turn = nil, turns = 2 },
    { head_id = "ls", name = nil, main = false, current = false, spawn_root = "r", status = "completed", seq = 11,
      label = "sub-agent", from_turn = vim.NIL, turns = 0 },
  }, { l2 = main, l3 = fork, ls = spawn })
  H.eq(tm.lines(entries), {
    "○ main  completed  l2",
    "  ✓ #2 one",
    "  ○ sub-agent (spawn)  completed  ls",
    "  ● three  error  from turn 1  l3",
    "    ✗ #8 three",
    "  ✓ #6 two",
  }, "tree lines: the fork hangs after the turn it shares")
  H.eq(entries[5].covers, { "u1", "l1", "t1", "l1b", "u3", "l3" }, "compaction covers the chain through the turn")
  H.eq(entries[4].fork_at, "l1b", "fork point")

  -- JSON pretty printer keeps message keys first
  H.eq(require("sessiondag.json").pretty({ { content = "x", role = "user", extra = vim.empty_dict() } }),
    '[\n  {\n    "role": "user",\n    "content": "x",\n    "extra": {}\n  }\n]', "pretty json")
  -- paths: the same socket key as the daemon for a state dir
  local paths = require("sessiondag.paths")
  H.eq(paths.default_socket(paths.state_dir()), vim.env.SD_TEST_SOCKET_EXPECTED, "the daemon's own default socket path")

  -- :help sessiondag works once the plugin manager has run :helptags on doc/
  local doc = vim.api.nvim_get_runtime_file("doc/sessiondag.txt", false)[1]
  H.ok(doc, "doc/sessiondag.txt on the runtimepath")
  vim.cmd("helptags " .. vim.fn.fnameescape(vim.fs.dirname(doc)))
  for _, tag in ipairs({ "sessiondag", ":Sessiondag", "sessiondag-setup", "sessiondag-maps", "sessiondag.status()",
                         "sessiondag-branches", "sessiondag-health" }) do
    vim.cmd("help " .. tag)
    H.eq(vim.fn.expand("%:t"), "sessiondag.txt", "help " .. tag)
    vim.cmd("close")
  end
end)
