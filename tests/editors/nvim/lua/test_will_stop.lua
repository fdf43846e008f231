-- `sessiondag daemon stop` with auto_start off: the plugin hears daemon/will_stop (sent to every
-- client), says the daemon stopped and why instead of taking it for a crash, and :Sessiondag start
-- starts a new one; the chat goes on.
local H = require("harness")
H.run(function()
  local client, gen = H.chat_without_auto_start()
  local stop = vim.system({ "sessiondag", "daemon", "stop", "--state-dir", vim.env.SD_TEST_STATE }, { text = true }):wait()
  H.eq(stop.code, 0, "daemon stop: " .. (stop.stderr or ""))
  H.wait(function()
    return H.heard("the daemon stopped (sessiondag daemon stop); :Sessiondag start starts a new one")
  end, "the stop notice, naming why")
  H.ok(client.state ~= "connected", "disconnected")
  vim.cmd("Sessiondag start")
  H.turn_on_new_daemon(gen, "connected to a daemon :Sessiondag start started", "after the stop", "still here")
end)
