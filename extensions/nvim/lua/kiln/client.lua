-- The one `kiln lsp` client per workspace: starting it with vim.lsp.start, attaching file
-- buffers under the root, and thin request/notify wrappers the UI modules share.
local config = require('kiln.config')

local M = {}

local GROUP = 'kiln.client'
local PROTOCOL_VERSION = 1 -- lsp_server/PROTOCOL.md

---@type table<string, integer> root -> client id
local by_root = {}

--- The root of the client used last (the chat and other scratch buffers have no file, so
--- they talk to the workspace the user came from).
local last_root = nil

--- Root of the workspace that holds `bufnr` (the nearest marker), else the cwd. A buffer that
--- is no file (the chat's `kiln://prompt`: vim.fs.root of `kiln:/` is `.`, which the server
--- took for `/`, indexing the whole disk) counts as the cwd.
function M.root(bufnr)
  bufnr = bufnr or 0
  local name = vim.bo[bufnr].buftype == '' and vim.api.nvim_buf_get_name(bufnr) or ''
  local start = name ~= '' and vim.fs.dirname(name) or vim.fn.getcwd()
  local found = vim.fs.root(start, config.options.root_markers)
  return vim.fs.normalize(found or vim.fn.getcwd())
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  -- documentChanges lets the server send the buffer version, so a buffer the user edited
  -- after the proposal is refused instead of being overwritten. No changeAnnotationSupport:
  -- proposals are reviewed in our own diff view before the server applies them.
  caps.workspace.workspaceEdit = {
    documentChanges = true,
    resourceOperations = { 'create' },
  }
  caps.workspace.configuration = true
  return caps
end

local function handlers()
  return {
    ['kiln/session/update'] = function(_, params)
      require('kiln.chat').on_update(params)
    end,
    ['kiln/session/requestPermission'] = function(_, params, ctx)
      return require('kiln.review').on_permission(params, ctx)
    end,
    ['workspace/applyEdit'] = function(_, params, ctx)
      return require('kiln.edits').apply(params, ctx)
    end,
    ['$/cancelRequest'] = function(_, params)
      require('kiln.review').on_server_cancel(params)
    end,
  }
end

--- An empty Lua table encodes as a JSON array; the server expects objects.
local function as_object(t)
  if t == nil or next(t) == nil then
    return vim.empty_dict()
  end
  return t
end

local function missing_message(cmd)
  return string.format(
    'kiln: cannot start the server: `%s` is not installed or not on PATH. '
      .. 'Install Kiln with `pip install -e .` in a checkout of Kiln, or set require("kiln").setup{ cmd = {...} }.',
    cmd[1]
  )
end

local function is_file_buffer(bufnr)
  return vim.api.nvim_buf_is_valid(bufnr)
    and vim.bo[bufnr].buftype == ''
    and vim.api.nvim_buf_get_name(bufnr) ~= ''
end

--- Start (or reuse) the client for the workspace of `bufnr` (or `root`). Returns the client,
--- or nil and a one-line reason (also shown with vim.notify).
function M.start(bufnr, root)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local opts = config.options
  local cmd = opts.cmd
  if type(cmd) == 'string' then
    cmd = { cmd }
  end
  if type(cmd) ~= 'table' or not cmd[1] or vim.fn.executable(cmd[1]) == 0 then
    local msg = missing_message(type(cmd) == 'table' and cmd or { tostring(cmd) })
    vim.notify(msg, vim.log.levels.ERROR)
    return nil, msg
  end
  root = root or M.root(bufnr)
  local existing = by_root[root] and vim.lsp.get_client_by_id(by_root[root])
  if existing and not existing:is_stopped() then
    if is_file_buffer(bufnr) then
      vim.lsp.buf_attach_client(bufnr, existing.id)
    end
    return existing
  end
  local id = vim.lsp.start({
    name = 'kiln',
    cmd = cmd,
    cmd_env = opts.cmd_env,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fs.basename(root) } },
    capabilities = capabilities(),
    init_options = as_object(opts.init_options),
    settings = { kiln = as_object(opts.settings) },
    handlers = handlers(),
    on_init = function(client)
      M.greet(client)
    end,
    on_exit = function(code, signal, client_id)
      vim.schedule(function()
        require('kiln.chat').on_exit(code, signal, client_id)
      end)
    end,
    -- A buffer named on the command line is not loaded yet when setup{} runs from init.lua;
    -- attaching it now fails, so it is attached by the BufReadPost autocmd instead.
  }, {
    bufnr = bufnr,
    attach = is_file_buffer(bufnr) and vim.api.nvim_buf_is_loaded(bufnr),
  })
  if not id then
    local msg = 'kiln: the language server did not start (see :LspLog)'
    vim.notify(msg, vim.log.levels.ERROR)
    return nil, msg
  end
  by_root[root] = id
  last_root = root
  M.watch_buffers()
  return vim.lsp.get_client_by_id(id)
end

function M.running(root)
  local client = root and by_root[root] and vim.lsp.get_client_by_id(by_root[root])
  if client and not client:is_stopped() then
    return client
  end
end

--- The running client for the current buffer's workspace (for a scratch buffer: the last
--- workspace used), starting it if needed.
function M.get()
  local buf = vim.api.nvim_get_current_buf()
  local root = is_file_buffer(buf) and M.root(buf) or last_root or M.root(buf)
  local client = M.running(root)
  if not client then
    local why
    -- the chat's prompt has no file: a server that stopped starts again where it ran
    client, why = M.start(buf, root)
    if not client then
      return nil, why
    end
  end
  last_root = client.root_dir
  return client
end

--- The server's kiln/hello answer per client id (version, capabilities, effective config).
M.hello = {}

--- Ask kiln/hello once the client is up: warn about a protocol this plugin does not speak and
--- about initializationOptions the server refused (it reports them here, not as a failure).
function M.greet(client)
  client:request('kiln/hello', vim.empty_dict(), function(err, result)
    if err or type(result) ~= 'table' then
      return
    end
    M.hello[client.id] = result
    if result.protocolVersion ~= PROTOCOL_VERSION then
      vim.notify(
        string.format(
          'kiln: the server speaks protocol %s; this plugin was written for %d (update one of them)',
          tostring(result.protocolVersion),
          PROTOCOL_VERSION
        ),
        vim.log.levels.WARN
      )
    end
    if result.configError then
      vim.notify('kiln: init_options: ' .. tostring(result.configError), vim.log.levels.WARN)
    end
  end)
end

--- Root of the workspace the plugin talks to (the last one used).
function M.current_root()
  return last_root or M.root(0)
end

--- Attach every file buffer under a client's root, so the agent reads unsaved text.
function M.watch_buffers()
  local group = vim.api.nvim_create_augroup(GROUP, { clear = true })
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'BufEnter' }, {
    group = group,
    callback = function(args)
      M.attach(args.buf)
    end,
  })
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) then
      M.attach(buf)
    end
  end
end

function M.attach(bufnr)
  if not is_file_buffer(bufnr) then
    return
  end
  local name = vim.fs.normalize(vim.api.nvim_buf_get_name(bufnr))
  for root, id in pairs(by_root) do
    local client = vim.lsp.get_client_by_id(id)
    if client and (name:sub(1, #root + 1) == root .. '/') then
      if not vim.lsp.buf_is_attached(bufnr, id) then
        vim.lsp.buf_attach_client(bufnr, id)
      end
    end
  end
end

--- Send a request to `target` (default: the current workspace's client); `cb(err, result)`
--- runs on the main loop. Errors carry the server's hint.
function M.request(method, params, cb, target)
  local client, why = target, nil
  if not client then
    client, why = M.get()
  end
  if not client then
    return cb({ message = why, notified = true }) -- M.start told the user already
  end
  local ok = client:request(method, params, function(err, result)
    if err then
      local hint = type(err.data) == 'table' and err.data.hint or nil
      err = { code = err.code, message = err.message, hint = hint, data = err.data }
    end
    cb(err, result)
  end)
  if not ok then
    cb({ message = 'the language server is not running' })
  end
end

function M.notify(method, params, target)
  local client = target or M.get()
  return client ~= nil and client:notify(method, params)
end

--- Format an error from M.request as one line for vim.notify.
function M.describe(err)
  local text = 'kiln: ' .. (tostring(err.message or err):gsub('^kiln: ', ''))
  if err.hint and err.hint ~= '' then
    text = text .. ' (' .. M.in_nvim(err.hint) .. ')'
  end
  return text
end

--- A hint written for the terminal, in this plugin's words: the agent words a session that
--- changed in another process as `kiln run --resume ID`, here that is :KilnResume.
function M.in_nvim(hint)
  hint = hint:gsub('kiln run %-%-resume ([%w%-]+)', ':KilnResume, session %1')
  return (hint:gsub('`?kiln sessions list`?', ':KilnResume'))
end

--- Tell the user about an error from M.request, unless starting the server already did.
function M.report(err, level)
  if not err.notified then
    vim.notify(M.describe(err), level or vim.log.levels.ERROR)
  end
end

--- Stop every client started by this plugin (tests).
function M.stop()
  for root, id in pairs(by_root) do
    local client = vim.lsp.get_client_by_id(id)
    if client then
      client:stop()
    end
    by_root[root] = nil
  end
end

return M
