---@mod sessiondag.ui Asking the user from a command's coroutine (client.run): vim.ui.select and
--- vim.ui.input, waited for, so a command reads as straight-line code.
local client = require("sessiondag.client")

local M = {}

--- (in a coroutine) the item of `items` the user picked (vim.ui.select's `opts`), nil for none.
function M.pick(items, opts)
  return (client.suspend(function(done)
    vim.ui.select(items, opts, done)
  end))
end

--- (in a coroutine) true if the user chose `yes` over "Cancel" when asked `prompt`.
function M.confirm(yes, prompt, kind)
  return M.pick({ yes, "Cancel" }, { prompt = prompt, kind = kind }) == yes
end

--- (in a coroutine) the text the user typed (vim.ui.input's `opts`), nil when cancelled.
function M.input(opts)
  return (client.suspend(function(done)
    vim.ui.input(opts, done)
  end))
end

--- (in a coroutine) `method`'s result. When the daemon refuses it with error kind `o.refused`, the
--- user is asked whether to go on (`o.yes` over "Cancel"; `o.prompt(err)`, `o.kind`); on yes it is
--- sent again with `params[o.flag] = true`. nil when the user declined.
function M.await_or_ask(method, params, o)
  local err, res = client.suspend(function(done)
    client.request(method, params, done)
  end)
  if err and type(err.data) == "table" and err.data.kind == o.refused then
    if not M.confirm(o.yes, o.prompt(err), o.kind) then
      return nil
    end
    params[o.flag] = true
    return client.await(method, params)
  elseif err then
    error(err, 0)
  end
  return res
end

return M
