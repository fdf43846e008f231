-- `sessiondag daemon stop` with auto_start off: the plugin hears daemon/will_stop (sent to every
-- client), says the daemon stopped and why instead of taking it for a crash, and :Sessiondag start
-- starts a new one; the chat goes on.
local H = require("harness")
H.run(function()
  require("sessiondag").setup({ layout = "tab", auto_start = false })
  local chat = H.open_chat()
  local session = require("sessiondag.session")
  local client = require("sessiondag.client")
  local gen = client.generation
  local stop = vim.system({ "sessiondag", "daemon", "stop", "--state-dir", vim.env.SD_TEST_STATE }, { text = true }):wait()
  H.eq(stop.code, 0, "daemon stop: " .. (stop.stderr or ""))
  H.wait(function()
    return H.heard("the daemon stopped (sessiondag daemon stop); :Sessiondag start starts a new one")
  end, "the stop notice, naming why")
  H.ok(client.state ~= "connected", "disconnected")
  vim.cmd("Sessiondag start")
  H.wait(function()
    return client.state == "connected" and client.generation > gen
  end, "connected to a daemon :Sessiondag start started", 60000)
  chat.send("after the stop")
  H.wait(function()
    return not session.running and H.buf_text(chat.buf):find("still here", 1, true)
  end, "a turn on the new daemon")
end)
