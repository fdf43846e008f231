-- :checkhealth sessiondag passes against a running daemon.
local H = require("harness")
H.run(function()
  require("sessiondag").setup({ socket = vim.env.SD_TEST_SOCKET })
  local client = require("sessiondag.client")
  local done
  client.request("daemon/ping", nil, function(err)
    done = { err = err }
  end)
  H.wait(function()
    return done
  end, "ping")
  H.eq(done.err, nil, "ping error")
  vim.cmd("checkhealth sessiondag")
  local text = H.buf_text(0)
  H.log(text)
  H.ok(text:find("OK `sessiondag` found", 1, true), "executable ok")
  H.ok(text:find("OK socket .* %(0600%)"), "socket ok")
  if not vim.env.SD_TEST_SOCKET then -- a configured socket elsewhere needs no runtime dir
    H.ok(text:find("OK runtime dir .* %(0700%)"), "runtime dir ok")
  end
  H.ok(text:find("OK daemon 0%.1%.0 running"), "daemon ok")
  H.ok(not text:find("ERROR", 1, true), "no errors")
end)
