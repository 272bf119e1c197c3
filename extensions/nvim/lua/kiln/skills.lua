-- :KilnSkills: search the registry, pick a skill, confirm, install it through the server
-- (which owns the skills store and the security scan); with no query, list installed skills.
local client = require('kiln.client')

local M = {}

local function notify_err(err)
  client.report(err, vim.log.levels.ERROR)
end

local function done_message(result)
  return string.format('kiln: %s %s@%s (%s)', result.action, result.id, result.version, result.path)
end

--- What the server's review says about a skill, as lines for the confirmation prompt.
function M.review_lines(review)
  local lines = {
    string.format('Install %s@%s?', review.id or '?', review.version or '?'),
  }
  if review.description and review.description ~= '' then
    table.insert(lines, '  ' .. review.description)
  end
  table.insert(
    lines,
    string.format('  %d file(s), %d bytes', #(review.files or {}), review.sizeBytes or 0)
  )
  if review.scripts and #review.scripts > 0 then
    table.insert(lines, '  scripts: ' .. table.concat(review.scripts, ', '))
  end
  -- The tools the skill may use without asking: a YAML list as well as a string (a list was
  -- left out, and the prompt said nothing of what an install pre-approves).
  local tools = review.allowedTools
  if tools == vim.NIL then
    tools = nil
  elseif type(tools) == 'table' then
    tools = table.concat(vim.tbl_map(tostring, tools), ', ')
  elseif tools ~= nil then
    tools = tostring(tools)
  end
  table.insert(lines, '  allowed tools: ' .. ((tools and tools ~= '') and tools or 'none'))
  for _, f in ipairs(review.findings or {}) do
    local text = type(f) == 'table' and (f.message or f.rule or vim.inspect(f)) or tostring(f)
    local where = type(f) == 'table' and f.path and (' (' .. f.path .. ')') or ''
    table.insert(lines, '  finding: ' .. text .. where)
  end
  return lines
end

--- Install `spec` ("owner/name" or "owner/name@range"). The server first answers with a
--- review (files, scripts, scan findings); it is shown and the install repeated only if the
--- user says yes. `cb(err, result)` is optional; `result` is nil when the user declined.
function M.install(spec, opts, cb)
  opts = opts or {}
  local params = { spec = spec, scope = opts.scope, registry = opts.registry }
  local function finish(err, result)
    if err then
      notify_err(err)
    elseif result then
      vim.notify(done_message(result))
    end
    if cb then
      cb(err, result)
    end
  end
  client.request('kiln/skills/install', params, function(err, result)
    local review = err and type(err.data) == 'table' and err.data.review
    if not review then
      return finish(err, result)
    end
    local prompt = table.concat(M.review_lines(review), '\n')
    vim.ui.select({ 'Install', 'Cancel' }, { prompt = prompt, kind = 'kiln.confirm' }, function(c)
      if c ~= 'Install' then
        return finish(nil, nil)
      end
      client.request('kiln/skills/install', vim.tbl_extend('force', params, { yes = true }), finish)
    end)
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
        M.install(item.id, opts, cb)
      elseif cb then
        cb(nil, nil)
      end
    end)
  end)
end

--- Show the installed skills (project and user) in a scratch list.
function M.list(cb)
  client.request('kiln/skills/list', vim.empty_dict(), function(err, result)
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
  if sub == 'install' then
    if rest == '' then
      local said = 'kiln: :KilnSkills install needs a skill: owner/name or owner/name@version'
      return vim.notify(said, vim.log.levels.ERROR)
    end
    return M.install(rest)
  end
  return M.search(vim.trim(args))
end

return M
