-- :KilnSkills: search the registry, pick a skill, confirm, install it through the server
-- (which owns the skills store and the security scan); with no query, list installed skills.
local client = require('kiln.client')

local M = {}

local function notify_err(err)
  vim.notify(client.describe(err), vim.log.levels.ERROR)
end

--- Install `spec` ("owner/name" or "owner/name@range") after the user confirms.
--- `cb(err, result)` is optional.
function M.install(spec, opts, cb)
  opts = opts or {}
  local params = { spec = spec, yes = true, scope = opts.scope, registry = opts.registry }
  client.request('kiln/skills/install', params, function(err, result)
    if err then
      notify_err(err)
    else
      vim.notify(
        string.format('kiln: %s %s@%s (%s)', result.action, result.id, result.version, result.path)
      )
    end
    if cb then
      cb(err, result)
    end
  end)
end

local function confirm_install(item, opts, cb)
  local spec = item.id
  local label = string.format('Install %s@%s?', item.id, item.latestVersion or 'latest')
  vim.ui.select({ 'Install', 'Cancel' }, { prompt = label, kind = 'kiln.confirm' }, function(c)
    if c == 'Install' then
      M.install(spec, opts, cb)
    elseif cb then
      cb(nil, nil)
    end
  end)
end

--- Search the registry for `query` and offer the results with vim.ui.select.
function M.search(query, opts, cb)
  opts = opts or {}
  local params = { query = query, limit = opts.limit or 20, registry = opts.registry }
  client.request('kiln/skills/search', params, function(err, result)
    if err then
      notify_err(err)
      return cb and cb(err, nil)
    end
    local items = result.skills or {}
    if #items == 0 then
      vim.notify('kiln: no skill matches "' .. query .. '"')
      return cb and cb(nil, nil)
    end
    vim.ui.select(items, {
      prompt = 'Kiln skills matching "' .. query .. '"',
      kind = 'kiln.skill',
      format_item = function(item)
        local desc = item.description and (' — ' .. item.description) or ''
        return string.format('%s@%s%s', item.id, item.latestVersion or '?', desc)
      end,
    }, function(item)
      if item then
        confirm_install(item, opts, cb)
      elseif cb then
        cb(nil, nil)
      end
    end)
  end)
end

--- Show the installed skills (project and user) in a scratch list.
function M.list(cb)
  client.request('kiln/skills/list', {}, function(err, result)
    if err then
      notify_err(err)
      return cb and cb(err, nil)
    end
    local lines = {}
    for _, s in ipairs(result.skills or {}) do
      table.insert(lines, string.format('%-24s %-8s %s', s.name, s.scope, s.description or ''))
    end
    for _, w in ipairs(result.warnings or {}) do
      table.insert(lines, 'warning: ' .. w)
    end
    vim.notify(#lines > 0 and table.concat(lines, '\n') or 'kiln: no skills installed')
    if cb then
      cb(nil, result)
    end
  end)
end

--- Entry point of :KilnSkills [query | install SPEC].
function M.command(args)
  local sub, rest = args:match('^%s*(%S+)%s*(.-)%s*$')
  if not sub then
    return M.list()
  end
  if sub == 'install' and rest ~= '' then
    return M.install(rest)
  end
  return M.search(vim.trim(args))
end

return M
