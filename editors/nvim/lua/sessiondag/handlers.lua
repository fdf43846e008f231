---@mod sessiondag.handlers Server->client requests: permissions through vim.ui.select, questions through vim.ui.input
local client = require("sessiondag.client")

local M = {}

M.ALLOW, M.DENY = "Allow", "Deny"

--- The question shown for a permission request, naming the exact file or command.
function M.permission_prompt(params)
  local d = params.detail or {}
  if params.kind == "run" then
    return ("sessiondag: run command `%s`?"):format(d.command or "?")
  end
  return ("sessiondag: %s %s?"):format(d.tool or "write", d.path or "?")
end

function M.register()
  client.on_request("agent/request_permission", function(params, reply)
    vim.ui.select({ M.ALLOW, M.DENY }, {
      prompt = M.permission_prompt(params),
      kind = "sessiondag.permission",
    }, function(choice)
      reply({ granted = choice == M.ALLOW })
    end)
  end)
  client.on_request("agent/ask_user", function(params, reply)
    local prompt = params.question or "?"
    if type(params.options) == "table" and #params.options > 0 then
      prompt = ("%s [%s]"):format(prompt, table.concat(params.options, "/"))
    end
    vim.ui.input({ prompt = prompt .. " ", kind = "sessiondag.ask_user" }, function(answer)
      if answer == nil then
        reply(nil, { code = -32800, message = "the user dismissed the question" })
      else
        reply({ answer = answer })
      end
    end)
  end)
end

return M
