-- A second process's `sessiondag run` on the same session shows up live (session/did_change),
-- while it is still running; the daemon restarting is survived (reconnect).
local H = require("harness")
H.run(function()
  require("sessiondag").setup({ layout = "tab" })
  local chat = require("sessiondag.chat")
  local session = require("sessiondag.session")
  local client = require("sessiondag.client")
  local branches = require("sessiondag.branches")
  H.open_chat()
  vim.cmd("Sessiondag branches")
  H.wait(function()
    return branches.buf and H.buf_text(branches.buf):find("sessiondag branches", 1, true)
  end, "branches")
  -- another process runs a turn that hangs in the model after streaming its text
  -- (a daemon serves the state dir, so the run goes through it: its tokens fan out to this subscriber)
  local proc = vim.system({ "sessiondag", "run", "task from the terminal", "--session", session.id,
                            "--workdir", vim.env.SD_TEST_WORK, "--script", vim.env.SD_TEST_LIVE_SCRIPT },
    { text = true })
  H.wait(function()
    return H.buf_text(chat.buf):find("task from the terminal", 1, true)
  end, "the other process's user message in the chat")
  H.wait(function()
    return H.buf_text(branches.buf):find("task from the terminal", 1, true)
  end, "the other process's turn in the branches buffer")
  H.ok(proc:is_closing() ~= true, "the other process is still running")
  H.wait(function()
    return require("sessiondag").status():find("▶", 1, true)
  end, "the statusline showing the other process's running turn")
  proc:kill("sigint")
  local res = proc:wait(30000)
  H.log("run exited", res.code, res.stderr)
  H.wait(function()
    return H.buf_text(chat.buf):find("cancelled", 1, true) and not require("sessiondag").status():find("▶", 1, true)
  end, "the cancelled turn, live, and no running turn in the statusline")

  -- a turn the terminal runs to its end counts in the statusline's usage (it was 0/0 before)
  H.ok(require("sessiondag").status():find(" 0/0", 1, true), "no usage yet: " .. require("sessiondag").status())
  local r2 = vim.system({ "sessiondag", "run", "after restart, from the terminal", "--session", session.id,
                          "--workdir", vim.env.SD_TEST_WORK, "--script", vim.env.SD_TEST_LIVE_SCRIPT },
    { text = true }):wait(60000)
  H.ok(r2.code == 0, "the terminal's second turn: " .. tostring(r2.stderr))
  H.wait(function()
    return not require("sessiondag").status():find(" 0/0", 1, true)
  end, "the statusline counting the terminal's turn")

  -- the daemon goes away: the plugin reconnects (starting a new one) and subscribes again
  local gen = client.generation
  local pid = client.server_info and vim.fn.json_decode(vim.fn.readfile(vim.env.SD_TEST_STATE .. "/daemon.pid")[1]).pid
  H.ok(pid, "daemon pid")
  vim.uv.kill(pid, "sigterm")
  H.wait(function()
    return client.state == "connected" and client.generation > gen
  end, "reconnected", 90000) -- a SIGTERMed daemon commits its turns first; slow under load
  chat.send("after restart")
  H.wait(function()
    return not session.running and H.buf_text(chat.buf):find("still here", 1, true)
  end, "a turn after the reconnect")
end)
