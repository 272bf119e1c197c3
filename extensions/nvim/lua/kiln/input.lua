-- The chat's prompt: an ordinary scratch buffer, so a pasted multi-line question stays whole.
-- <CR> sends (in Insert mode too, unless the completion menu is open), <S-CR> or <C-j> starts
-- a new line. `@` and a leading `/` open completion (kiln.complete); what is chosen, and
-- selections added with :KilnAdd, are shown as context pills in the prompt's window bar until
-- the question is sent.
local complete = require('kiln.complete')

local M = {}

local S = {
  buf = nil,
  context = {}, -- { label, block } sent with the next question
  on_submit = nil,
}
M.state = S

local function valid(buf)
  return buf ~= nil and vim.api.nvim_buf_is_valid(buf)
end

--- Refresh the pills in every window that shows the prompt.
function M.render_pills()
  if not valid(S.buf) then
    return
  end
  local text = ''
  if #S.context > 0 then
    local labels = {}
    for _, c in ipairs(S.context) do
      table.insert(labels, '[' .. c.label:gsub('%%', '%%%%') .. ']')
    end
    text = 'context: ' .. table.concat(labels, ' ') .. '  (:KilnAdd clear)'
  end
  for _, win in ipairs(vim.fn.win_findbuf(S.buf)) do
    vim.wo[win].winbar = text
  end
end

--- Add a prompt block to the next question, shown as a pill labelled `label`.
function M.add_context(block, label)
  for _, c in ipairs(S.context) do
    if c.label == label then
      return
    end
  end
  table.insert(S.context, { label = label, block = block })
  M.render_pills()
end

function M.clear_context()
  S.context = {}
  M.render_pills()
end

--- The text typed so far and the context blocks; both are emptied.
function M.take()
  local lines = vim.api.nvim_buf_get_lines(S.buf, 0, -1, false)
  local text = vim.trim(table.concat(lines, '\n'))
  local blocks, labels = {}, {}
  for _, c in ipairs(S.context) do
    table.insert(blocks, c.block)
    table.insert(labels, c.label)
  end
  return text, blocks, labels
end

function M.reset()
  if valid(S.buf) then
    vim.api.nvim_buf_set_lines(S.buf, 0, -1, false, { '' })
  end
  M.clear_context()
end

local function submit()
  local text, blocks, labels = M.take()
  if text == '' then
    return
  end
  if S.on_submit(text, blocks, labels) ~= false then
    M.reset()
  end
end

--- The prompt buffer, created on first use; `on_submit(text, blocks, labels)` sends.
function M.buffer(on_submit, on_stop)
  S.on_submit = on_submit
  if valid(S.buf) then
    return S.buf
  end
  local buf = vim.api.nvim_create_buf(false, true)
  S.buf = buf
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'kiln-prompt'
  vim.bo[buf].omnifunc = "v:lua.require'kiln.complete'.omnifunc"
  vim.bo[buf].completeopt = 'menuone,noinsert'
  pcall(vim.api.nvim_buf_set_name, buf, 'kiln://prompt')
  local map = function(modes, lhs, rhs, desc, opts)
    vim.keymap.set(
      modes,
      lhs,
      rhs,
      vim.tbl_extend('force', { buffer = buf, desc = 'Kiln: ' .. desc }, opts or {})
    )
  end
  map('i', '<CR>', function()
    if vim.fn.pumvisible() == 1 then
      -- Accept the highlighted item, or the first one when none is highlighted yet.
      return vim.fn.complete_info({ 'selected' }).selected == -1 and '<C-n><C-y>' or '<C-y>'
    end
    vim.schedule(submit)
    return ''
  end, 'send the question', { expr = true })
  map('n', '<CR>', submit, 'send the question')
  map('i', '<S-CR>', '<CR>', 'new line')
  map('i', '<C-j>', '<CR>', 'new line')
  map({ 'n', 'i' }, '<C-c>', on_stop, 'stop the turn')
  -- The menu opens when the server answers (kiln.complete asks without waiting).
  map('i', '@', function()
    vim.schedule(complete.refresh)
    return '@'
  end, 'mention a file, folder or symbol', { expr = true })
  map('i', '/', function()
    local col = vim.fn.col('.')
    if vim.fn.line('.') == 1 and col == 1 and vim.fn.getline(1) == '' then
      vim.schedule(complete.refresh)
    end
    return '/'
  end, 'slash command', { expr = true })
  complete.attach(buf)
  vim.api.nvim_create_autocmd('CompleteDone', {
    buffer = buf,
    callback = function()
      local data = (vim.v.completed_item or {}).user_data
      if type(data) == 'table' and data.kiln then
        M.add_context(complete.block(data.kiln), vim.v.completed_item.word)
      end
    end,
  })
  local ok, cmp = pcall(require, 'cmp')
  if ok and cmp.register_source then
    pcall(cmp.register_source, 'kiln', complete.cmp_source.new())
    -- cmp.setup.buffer configures the current buffer, which is still the user's file here
    -- (the prompt is made before its window opens): run it in the prompt buffer.
    pcall(vim.api.nvim_buf_call, buf, function()
      cmp.setup.buffer({ sources = { { name = 'kiln' } } })
    end)
    cmp.event:on('confirm_done', function(evt)
      local data = evt.entry and evt.entry.completion_item and evt.entry.completion_item.data
      if data and data.kiln then
        M.add_context(complete.block(data.kiln), evt.entry.completion_item.label)
      end
    end)
  end
  return buf
end

return M
