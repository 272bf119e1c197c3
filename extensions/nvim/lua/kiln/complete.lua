-- `@` mentions and `/` commands for the chat prompt: the items come from the server
-- (kiln/complete/mentions, ranked by Kiln's index; kiln/complete/commands, built-ins and
-- installed skills) and reach the user through the editor's own completion: 'omnifunc'
-- (<C-x><C-o>, triggered when `@` or a leading `/` is typed), and an nvim-cmp or blink.cmp
-- source when one of them is installed (see kiln.blink).
local M = {}

local KIND = { file = 'f', folder = 'd', symbol = 's', builtin = 'c', skill = 'k' }

--- Where the word being completed starts in `line` (text before the cursor), with its trigger:
--- `@` anywhere, `/` only as the first character of the prompt.
function M.trigger(line, first_line)
  local at = line:find('@[%w%._/%-]*$')
  if at then
    return at, '@'
  end
  if first_line and line:find('^/[%w%._%-]*$') then
    return 1, '/'
  end
end

--- Completion items (the shape of complete-items) for `base` ("@conf", "/pd").
function M.items(base, client, timeout)
  client = client or require('kiln.client').get()
  if not client then
    return {}
  end
  local trigger, query = base:sub(1, 1), base:sub(2)
  local out = {}
  if trigger == '@' then
    local res = client:request_sync(
      'kiln/complete/mentions',
      { query = query, limit = 30 },
      timeout or 2000
    )
    for _, item in ipairs(res and res.result and res.result.items or {}) do
      local word = '@' .. (item.kind == 'symbol' and item.label or item.path)
      table.insert(out, {
        word = word,
        abbr = item.label,
        menu = item.kind == 'symbol' and item.detail or item.path,
        kind = KIND[item.kind] or '',
        user_data = { kiln = item },
      })
    end
  elseif trigger == '/' then
    local res = client:request_sync('kiln/complete/commands', { query = query }, timeout or 2000)
    for _, cmd in ipairs(res and res.result and res.result.commands or {}) do
      table.insert(out, {
        word = '/' .. cmd.name .. ' ',
        abbr = '/' .. cmd.name .. (cmd.args ~= '' and (' ' .. cmd.args) or ''),
        menu = cmd.description,
        kind = KIND[cmd.kind] or '',
        user_data = { kiln_command = cmd },
      })
    end
  end
  return out
end

--- 'omnifunc' of the chat prompt.
function M.omnifunc(findstart, base)
  if findstart == 1 then
    local line = vim.api.nvim_get_current_line():sub(1, vim.fn.col('.') - 1)
    local at = M.trigger(line, vim.fn.line('.') == 1)
    return at and (at - 1) or -3
  end
  -- refresh: the server is asked again as the word grows, so the whole word is ranked by
  -- the index (Neovim would only filter the first answer).
  return { words = M.items(base), refresh = 'always' }
end

--- The prompt block for a chosen mention: a resource_link (a symbol's lines as its range).
function M.block(item)
  local block = { type = 'resource_link', uri = item.uri, name = item.path }
  if item.kind == 'symbol' and item.line then
    block.range = {
      start = { line = item.line - 1, character = 0 },
      ['end'] = { line = (item.endLine or item.line) - 1, character = 0 },
    }
  end
  return block
end

--- nvim-cmp source (registered by kiln.input when nvim-cmp is installed).
M.cmp_source = {}

function M.cmp_source.new()
  return setmetatable({}, { __index = M.cmp_source })
end

function M.cmp_source:get_trigger_characters()
  return { '@', '/' }
end

function M.cmp_source:get_keyword_pattern()
  return [[\%([@/][[:alnum:]._/-]*\)]]
end

function M.cmp_source:is_available()
  return vim.bo.filetype == 'kiln-prompt'
end

function M.cmp_source:complete(params, callback)
  local line = params.context.cursor_before_line
  local at = M.trigger(line, params.context.cursor.row == 1)
  if not at then
    return callback({ items = {}, isIncomplete = false })
  end
  local items = {}
  for _, it in ipairs(M.items(line:sub(at))) do
    table.insert(items, {
      label = it.word,
      filterText = it.word,
      detail = it.menu,
      data = it.user_data,
    })
  end
  callback({ items = items, isIncomplete = true })
end

return M
