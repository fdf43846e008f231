---@mod sessiondag.client One connection to the daemon: discovery, auto-start, requests, reconnect
---
--- The transport is `vim.lsp.rpc.connect(socket)`. Requests take a callback `cb(err, result)`;
--- inside `M.run(fn)` (a coroutine) `M.await(method, params)` returns the result or raises the error.
local config = require("sessiondag.config")
local daemon = require("sessiondag.daemon")
local paths = require("sessiondag.paths")
local uv = vim.uv or vim.loop

local M = {
  state = "disconnected", -- disconnected | connecting | connected
  server_info = nil,
  socket = nil,
  started_pid = nil, -- pid of a daemon this client started
  generation = 0, -- bumps on every (re)connect
}

local rpc ---@type vim.lsp.rpc.PublicClient?
local waiters = {} -- callbacks waiting for a connection
local listeners = {} -- method -> { fn, ... } (notifications and "connected"/"disconnected")
local request_handlers = {} -- server->client method -> fn(params, reply)
local closing_on_purpose = false
local reconnect_timer
local stop_reason -- daemon/will_stop's reason for the current connection (nil: it did not say: a crash)
local force_start = false -- :Sessiondag start: start a daemon even with auto_start off

-- daemon/will_stop's reason, as the CLI says it
M.STOP_REASONS = { stop = "sessiondag daemon stop", signal = "it got a signal", idle = "idle timeout",
  stdio_closed = "its client went away" }

local function fire(method, params)
  for _, fn in ipairs(listeners[method] or {}) do
    local ok, err = pcall(fn, params)
    if not ok then
      vim.notify(("sessiondag: %s handler failed: %s"):format(method, err), vim.log.levels.ERROR)
    end
  end
end

--- Listen to a notification method (or "connected" / "disconnected"); returns an unsubscribe fn.
function M.on(method, fn)
  listeners[method] = listeners[method] or {}
  table.insert(listeners[method], fn)
  return function()
    for i, f in ipairs(listeners[method] or {}) do
      if f == fn then
        table.remove(listeners[method], i)
        return
      end
    end
  end
end

--- Answer a server->client request: fn(params, reply) where reply(result) or reply(nil, err).
function M.on_request(method, fn)
  request_handlers[method] = fn
end

--- "kind: message" of an RPC error (data.kind when the daemon sent one)
function M.describe(err)
  if type(err) ~= "table" then
    return tostring(err)
  end
  local kind = type(err.data) == "table" and err.data.kind or err.kind or (err.code and ("code " .. err.code))
  return ("%s: %s"):format(kind or "error", err.message or vim.inspect(err))
end

function M.notify_error(err, what)
  vim.notify(("sessiondag%s: %s"):format(what and (" " .. what) or "", M.describe(err)), vim.log.levels.ERROR)
end

--- (in a coroutine) Start an async operation with `start(done)` and wait until it calls done(...);
--- returns done's arguments. Works whether done is called at once or later from any context.
function M.suspend(start)
  local co = coroutine.running()
  assert(co, "sessiondag: suspend outside a coroutine")
  local out, waiting
  start(function(...)
    if out then
      return
    end
    out = { n = select("#", ...), ... }
    if waiting then
      vim.schedule(function()
        coroutine.resume(co)
      end)
    end
  end)
  if not out then
    waiting = true
    coroutine.yield()
  end
  return unpack(out, 1, out.n)
end

local function server_request(method, params)
  local fn = request_handlers[method]
  if not fn then
    return nil, { code = -32601, message = "no handler for " .. method }
  end
  local res, rerr = M.suspend(function(done)
    fn(params or {}, done)
  end)
  if rerr then
    return nil, { code = rerr.code or -32603, message = rerr.message or tostring(rerr) }
  end
  return res
end

local function flush_waiters(err)
  local ws = waiters
  waiters = {}
  for _, cb in ipairs(ws) do
    cb(err)
  end
end

local function on_exit()
  if M.state == "disconnected" then
    return
  end
  if M.state == "connecting" then -- it went away before answering initialize
    M.state = "disconnected"
    rpc = nil
    return flush_waiters({ kind = "disconnected", message = "the daemon closed the connection before it was ready" })
  end
  rpc = nil
  M.state = "disconnected"
  M.server_info = nil
  fire("disconnected", {})
  if stop_reason and not closing_on_purpose then -- stopped on purpose, not a crash: say so
    local how = config.options.auto_start and "a new one is started" or ":Sessiondag start starts a new one"
    vim.notify(("sessiondag: the daemon stopped (%s); %s"):format(M.STOP_REASONS[stop_reason] or stop_reason, how),
      vim.log.levels.WARN)
  end
  stop_reason = nil
  if not closing_on_purpose and config.options.reconnect then
    M.schedule_reconnect(0)
  end
end

local function probe(addr, cb)
  local pipe = uv.new_pipe(false)
  pipe:connect(addr, function(err)
    pipe:close()
    vim.schedule(function()
      cb(err)
    end)
  end)
end

local function dispatchers(on_closed)
  local gone = false
  local function closed() -- once per connection, however it ended
    if gone then
      return
    end
    gone = true
    if on_closed then
      on_closed()
    end
    vim.schedule(on_exit)
  end
  return {
    notification = function(method, params)
      if method == "daemon/will_stop" then -- sent to every client before the daemon closes its end
        stop_reason = (params or {}).reason or "stop"
      end
      fire(method, params or {})
    end,
    server_request = server_request,
    on_exit = closed,
    on_error = function(code, err)
      vim.notify(("sessiondag: connection error %s: %s"):format(code, vim.inspect(err)), vim.log.levels.DEBUG)
      -- a reset connection (a daemon that exits with bytes unread) is a read error, and vim.lsp.rpc then
      -- ends its read loop without calling on_exit: it is gone all the same
      if code == vim.lsp.rpc.client_errors.READ_ERROR then
        closed()
      end
    end,
  }
end

local function initialize(client, label, cb)
  local params = { client_info = { name = "sessiondag.nvim", pid = uv.os_getpid() } }
  client.request("initialize", params, function(err, result)
    if err then
      client.terminate()
      return cb(err)
    end
    rpc = client
    M.server_info = result
    M.socket = label
    M.state = "connected"
    M.generation = M.generation + 1
    cb(nil)
    fire("connected", result)
  end)
end

local function attach(path, cb)
  local ok, addr, close_dir = pcall(paths.short_address, path)
  if not ok then
    return cb({ kind = "connect_failed", message = tostring(addr) })
  end
  probe(addr, function(perr)
    if perr then
      if close_dir then
        close_dir()
      end
      return cb(perr)
    end
    local client = vim.lsp.rpc.connect(addr)(dispatchers(function()
      if close_dir then
        close_dir()
        close_dir = nil
      end
    end))
    initialize(client, path, cb)
  end)
end

--- `sessiondag serve --stdio` as a child of this Neovim (transport = "stdio").
local function attach_stdio(opts, cb)
  local cmd = vim.list_extend(vim.deepcopy(opts.cmd), { "serve", "--stdio", "--state-dir", paths.state_dir(opts.state_dir) })
  local ok, client = pcall(vim.lsp.rpc.start, cmd, dispatchers(nil))
  if not ok then
    return cb({ kind = "spawn_failed", message = tostring(client) })
  end
  initialize(client, "stdio", cb)
end

local function connect_now()
  local opts = config.options
  M.state = "connecting"
  local function done(err)
    if err then
      M.state = "disconnected"
    end
    flush_waiters(err)
  end
  if opts.transport == "stdio" then
    return attach_stdio(opts, done)
  end
  attach(paths.socket(opts), function(err)
    if not err then
      return done(nil)
    end
    if not (opts.auto_start or force_start) then
      return done({ kind = "no_daemon", message = ("no daemon answers on %s (%s)"):format(paths.socket(opts), err) })
    end
    -- start one the way every client does (`sessiondag daemon start --wait --json`: it waits until the
    -- daemon answers), then connect to the socket it names
    daemon.start(opts, function(serr, info)
      if serr then
        return done({ kind = "start_failed", message = serr })
      end
      M.started_pid = info.started and info.pid or nil
      M.daemon_log = info.log
      attach(info.socket, function(aerr)
        if aerr then
          return done({ kind = "start_failed", message = ("the daemon (pid %s, log %s) does not answer on %s: %s")
            :format(tostring(info.pid), tostring(info.log), info.socket, aerr) })
        end
        done(nil)
      end)
    end)
  end)
end

--- :Sessiondag start — connect, starting a daemon even with auto_start off (after a stop).
function M.start(cb)
  force_start = true
  M.ensure(function(err)
    force_start = false
    if cb then
      cb(err)
    elseif err then
      M.notify_error(err, "start")
    else
      vim.notify(("sessiondag: connected (%s)"):format(M.socket or "?"), vim.log.levels.INFO)
    end
  end)
end

--- Call cb(err) once connected (connecting, and starting a daemon, if needed).
function M.ensure(cb)
  if M.state == "connected" and rpc and not rpc.is_closing() then
    return cb(nil)
  end
  table.insert(waiters, cb)
  if M.state ~= "connecting" then
    closing_on_purpose = false
    connect_now()
  end
end

function M.schedule_reconnect(delay)
  if reconnect_timer then
    return
  end
  reconnect_timer = uv.new_timer()
  local attempt = 0
  local function try()
    attempt = attempt + 1
    M.ensure(function(err)
      if not err then
        reconnect_timer:close()
        reconnect_timer = nil
        return
      end
      if attempt >= 50 then
        reconnect_timer:close()
        reconnect_timer = nil
        M.notify_error(err, "reconnect")
        return
      end
      reconnect_timer:start(math.min(100 * attempt, 2000), 0, vim.schedule_wrap(try))
    end)
  end
  reconnect_timer:start(delay or 0, 0, vim.schedule_wrap(try))
end

local function clean(params)
  if params == nil or (type(params) == "table" and next(params) == nil) then
    return vim.empty_dict()
  end
  return params
end

--- Send a request; cb(err, result). Returns the request id (for $/cancelRequest) or nil.
function M.request(method, params, cb)
  cb = cb or function() end
  local id
  M.ensure(function(err)
    if err then
      return cb(err)
    end
    local ok, rid = rpc.request(method, clean(params), function(rerr, result)
      cb(rerr, result)
    end)
    if not ok then
      return cb({ kind = "disconnected", message = "the connection to the daemon is closed" })
    end
    id = rid
  end)
  return id
end

function M.notify(method, params)
  if rpc then
    rpc.notify(method, clean(params))
  end
end

--- Inside M.run: the result, or error(err) with the RPC error table.
function M.await(method, params)
  local err, res = M.suspend(function(done)
    M.request(method, params, done)
  end)
  if err then
    error(err, 0)
  end
  return res
end

--- Run fn in a coroutine; an error is shown with its kind via vim.notify (or passed to on_err).
function M.run(fn, on_err)
  local co = coroutine.create(function()
    local ok, err = pcall(fn)
    if not ok then
      if on_err then
        on_err(err)
      else
        M.notify_error(err)
      end
    end
  end)
  local ok, err = coroutine.resume(co)
  if not ok then
    M.notify_error(err)
  end
end

-- leaving Neovim closes the connection on purpose (no reconnect, no auto-start on the way out)
vim.api.nvim_create_autocmd("VimLeavePre", {
  group = vim.api.nvim_create_augroup("sessiondag_client", { clear = true }),
  callback = function()
    M.close()
  end,
})

--- Close the connection (no reconnect).
function M.close()
  closing_on_purpose = true
  if rpc then
    rpc.notify("exit", vim.empty_dict())
    if M.socket ~= "stdio" then
      rpc.terminate()
    end
    -- a stdio daemon stops on `exit` / end of input and commits open turns; no SIGTERM on top
  end
  rpc = nil
  M.state = "disconnected"
end

return M
