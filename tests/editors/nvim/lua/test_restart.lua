-- The daemon is restarted by someone else (auto_start off): the plugin reconnects to the new one,
-- subscribes again, and the chat goes on.
local H = require("harness")
H.run(function()
  require("sessiondag").setup({ layout = "tab", auto_start = false })
  local chat = H.open_chat()
  local session = require("sessiondag.session")
  local client = require("sessiondag.client")
  local state = vim.env.SD_TEST_STATE
  local gen = client.generation
  local pid = vim.json.decode(table.concat(vim.fn.readfile(state .. "/daemon.pid"), "\n")).pid
  vim.uv.kill(pid, "sigterm")
  H.wait(function()
    return client.state ~= "connected" and vim.fn.filereadable(state .. "/daemon.pid") == 0
  end, "the old daemon gone")
  vim.system({ "sessiondag", "serve", "--socket", "--state-dir", state }, { detach = true })
  H.wait(function()
    return client.state == "connected" and client.generation > gen
  end, "reconnected to the new daemon", 60000)
  chat.send("after restart")
  H.wait(function()
    return not session.running and H.buf_text(chat.buf):find("still here", 1, true)
  end, "a turn after the restart")
end)
