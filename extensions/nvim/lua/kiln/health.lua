-- :checkhealth kiln — the three things that stop the plugin from working: an old Neovim, a
-- missing `kiln` command, and a server that is not running for this workspace.
local M = {}

function M.check()
  local health = vim.health
  local config = require('kiln.config').options
  health.start('kiln')
  if vim.fn.has('nvim-0.11') == 1 then
    health.ok('Neovim ' .. tostring(vim.version()))
  else
    health.error('Neovim 0.11 or later is required')
  end
  local cmd = type(config.cmd) == 'table' and config.cmd or { tostring(config.cmd) }
  if vim.fn.executable(cmd[1]) == 1 then
    health.ok('server command: ' .. table.concat(cmd, ' '))
  else
    health.error(
      '`' .. tostring(cmd[1]) .. '` is not executable',
      { 'pip install -e . in a checkout of Kiln', 'or set require("kiln").setup{ cmd = {...} }' }
    )
  end
  local clients = vim.lsp.get_clients({ name = 'kiln' })
  if #clients == 0 then
    health.warn('no kiln client is running (call require("kiln").setup{} or :KilnChat)')
  end
  for _, client in ipairs(clients) do
    health.ok(string.format('client %d for %s', client.id, client.root_dir or '?'))
    local hello = require('kiln.client').hello[client.id]
    if hello then
      local cfg = hello.config or {}
      health.info(
        string.format(
          'server %s, protocol %s, mode %s, edit mode %s, provider %s',
          tostring(hello.serverVersion),
          tostring(hello.protocolVersion),
          tostring(cfg.mode),
          tostring(cfg.editMode),
          cfg.provider == nil and '(from the environment)' or tostring(cfg.provider)
        )
      )
      if hello.configError then
        health.warn('init_options: ' .. tostring(hello.configError))
      end
    end
    local res = client:request_sync('kiln/index/status', vim.empty_dict(), 2000)
    local status = res and res.result
    if status then
      health.info(
        string.format(
          'index: %s, %s files, %s blocks',
          tostring(status.state),
          tostring(status.files),
          tostring(status.blocks)
        )
      )
    elseif res and res.err then
      health.info('index: ' .. tostring(res.err.message))
    end
  end
end

return M
