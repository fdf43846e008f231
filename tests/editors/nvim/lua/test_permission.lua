-- agent/request_permission is answered through vim.ui.select: the user's choice decides.
local H = require("harness")
H.run(function()
  require("sessiondag").setup({ layout = "tab" })
  local asked = {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(asked, { items = items, prompt = opts.prompt, kind = opts.kind })
    -- the user refuses the first request and allows the second
    local choice = #asked == 1 and items[2] or items[1]
    vim.schedule(function()
      on_choice(choice, 1)
    end)
  end
  local chat = require("sessiondag.chat")
  local session = require("sessiondag.session")
  H.open_chat()
  local out = vim.env.SD_TEST_WORK .. "/out.txt"
  chat.send("write it")
  H.wait(function()
    return not session.running and H.buf_text(chat.buf):find("refused by the user", 1, true)
  end, "the refused turn")
  H.eq(#asked, 1, "one permission request")
  H.eq(asked[1].items, { "Allow", "Deny" }, "choices")
  H.ok(asked[1].prompt:find("out.txt", 1, true), "the prompt names the exact file: " .. asked[1].prompt)
  H.eq(asked[1].kind, "sessiondag.permission", "kind")
  H.eq(vim.fn.filereadable(out), 0, "a refused write writes nothing")
  chat.send("write it")
  H.wait(function()
    return not session.running and H.buf_text(chat.buf):find("written", 1, true)
  end, "the allowed turn")
  H.eq(#asked, 2, "second permission request")
  H.eq(vim.fn.readfile(out), { "v1" }, "the allowed write happened")
  -- the workspace change is listed in the chat with a map that opens a diff. The watcher may see
  -- the write after the fast scripted turn ended: then the daemon holds it for the next turn.
  local client = require("sessiondag.client")
  local pending = false
  H.wait(function()
    if H.buf_text(chat.buf):find("✎ added out.txt", 1, true) then
      return true
    end
    client.request("daemon/status", nil, function(_, st)
      pending = st and (st.pending_workspace_changes or {})[session.id] ~= nil
    end)
    return pending
  end, "the write seen by the daemon")
  if pending then
    chat.send("anything else")
  end
  H.wait(function()
    return H.buf_text(chat.buf):find("✎ added out.txt", 1, true)
  end, "workspace change line")
  local lnum = H.line_of(chat.buf, "✎ added out.txt")
  H.press(chat.buf, lnum, "gd")
  H.wait(function()
    return vim.fn.expand("%:t") == "out.txt"
  end, "the diff opens the changed file")
end)
