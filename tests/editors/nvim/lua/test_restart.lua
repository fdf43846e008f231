-- The daemon is restarted by someone else (auto_start off): the plugin reconnects to the new one,
-- subscribes again, and the chat goes on.
local H = require("harness")
H.run(function()
  local client, gen = H.chat_without_auto_start()
  local state = vim.env.SD_TEST_STATE
  local pid = vim.json.decode(table.concat(vim.fn.readfile(state .. "/daemon.pid"), "\n")).pid
  vim.uv.kill(pid, "sigterm")
  H.wait(function()
    return client.state ~= "connected" and vim.fn.filereadable(state .. "/daemon.pid") == 0
  end, "the old daemon gone")
  vim.system({ "sessiondag", "serve", "--socket", "--state-dir", state }, { detach = true })
  H.turn_on_new_daemon(gen, "reconnected to the new daemon", "after restart", "still here")
end)
