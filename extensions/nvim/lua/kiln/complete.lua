-- `@` mentions and `/` commands for the chat prompt: the items come from the server
-- (kiln/complete/mentions, ranked by Kiln's index; kiln/complete/commands, built-ins and
-- installed skills) and reach the user through the editor's own completion: 'omnifunc'
-- (<C-x><C-o>, triggered when `@` or a leading `/` is typed), and an nvim-cmp or blink.cmp
-- source when one of them is installed (see kiln.blink).
local M = {}

local KIND = { file = 'f', folder = 'd', symbol = 's', builtin = 'c', skill = 'k' }

--- Where the word being completed starts in `line` (text before the cursor), with its trigger:
--- `@` anywhere, `/` only as the first character of the prompt. A mention's word may hold any
--- byte past ASCII (`@café`, either spelling of the accent): `%w` matches ASCII only.
function M.trigger(line, first_line)
  local at = line:find('@[%w%._/%-\128-\255]*$')
  if at then
    return at, '@'
  end
  if first_line and line:find('^/[%w%._%-]*$') then
    return 1, '/'
  end
end

local function mention_items(result)
  local out = {}
  for _, item in ipairs(result and result.items or {}) do
    local word = '@' .. (item.kind == 'symbol' and item.label or item.path)
    table.insert(out, {
      word = word,
      abbr = item.label,
      menu = item.kind == 'symbol' and item.detail or item.path,
      kind = KIND[item.kind] or '',
      user_data = { kiln = item },
    })
  end
  return out
end

local function command_items(result)
  local out = {}
  for _, cmd in ipairs(result and result.commands or {}) do
    table.insert(out, {
      word = '/' .. cmd.name .. ' ',
      abbr = '/' .. cmd.name .. (cmd.args ~= '' and (' ' .. cmd.args) or ''),
      menu = cmd.description,
      kind = KIND[cmd.kind] or '',
      user_data = { kiln_command = cmd },
    })
  end
  return out
end

--- Ask the server for the completion items (the shape of complete-items) of `base` ("@conf",
--- "/pd"); `cb(items)` runs on the main loop when it answers. Never waits: a slow index must
--- not freeze the editor while the user types.
function M.fetch(base, cb, client)
  client = client or require('kiln.client').get()
  local trigger, query = base:sub(1, 1), base:sub(2)
  local method, params, shape
  if trigger == '@' then
    method, params, shape = 'kiln/complete/mentions', { query = query, limit = 30 }, mention_items
  elseif trigger == '/' then
    method, params, shape = 'kiln/complete/commands', { query = query }, command_items
  end
  if not client or not method then
    return cb({})
  end
  local ok = client:request(method, params, function(err, result)
    cb(err and {} or shape(result))
  end)
  if not ok then
    cb({})
  end
end

--- The popup of the prompt being typed in: `generation` counts the words asked for, so only
--- the answer for the text still in front of the cursor opens the menu; `active` from a
--- typed trigger until an item is taken or the cursor leaves the word.
local popup = { generation = 0, active = false }

--- Ask for the word before the cursor and show the menu when the answer comes (typing goes
--- on meanwhile; each change asks again and makes older answers stale).
function M.refresh()
  popup.generation = popup.generation + 1
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local line = vim.api.nvim_get_current_line():sub(1, col)
  local at = M.trigger(line, row == 1)
  if not at then
    popup.active = false
    return
  end
  popup.active = true
  local mine = popup.generation
  local buf, win = vim.api.nvim_get_current_buf(), vim.api.nvim_get_current_win()
  M.fetch(line:sub(at), function(items)
    local still = mine == popup.generation
      and popup.active
      and vim.api.nvim_get_current_win() == win
      and vim.api.nvim_get_current_buf() == buf
      and vim.fn.mode():sub(1, 1) == 'i'
      and vim.api.nvim_win_get_cursor(win)[1] == row
    if still then
      vim.fn.complete(at, items)
    end
  end)
end

--- Wire the popup to a prompt buffer: the trigger keys ask at once, later typing in the
--- same word asks again, taking an item ends it.
function M.attach(buf)
  local group = vim.api.nvim_create_augroup('kiln.complete.' .. buf, { clear = true })
  vim.api.nvim_create_autocmd({ 'TextChangedI', 'TextChangedP' }, {
    group = group,
    buffer = buf,
    callback = function()
      if popup.active then
        M.refresh()
      end
    end,
  })
  vim.api.nvim_create_autocmd('CompleteDone', {
    group = group,
    buffer = buf,
    callback = function()
      local reason = (vim.v.event or {}).reason
      local taken = (vim.v.completed_item or {}).word
      if reason == 'accept' or (reason == nil and taken and taken ~= '') then
        popup.active = false
      end
    end,
  })
  vim.api.nvim_create_autocmd('InsertLeave', {
    group = group,
    buffer = buf,
    callback = function()
      popup.active = false
      popup.generation = popup.generation + 1
    end,
  })
end

--- 'omnifunc' of the chat prompt (<C-x><C-o>): starts an asynchronous ask and leaves
--- completion mode at once; the menu opens when the server answers.
function M.omnifunc(findstart, _)
  if findstart == 1 then
    vim.schedule(M.refresh)
    return -3
  end
  return {}
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
  M.fetch(line:sub(at), function(found)
    local items = {}
    for _, it in ipairs(found) do
      table.insert(items, {
        label = it.word,
        filterText = it.word,
        detail = it.menu,
        data = it.user_data,
      })
    end
    callback({ items = items, isIncomplete = true })
  end)
end

return M
