-- The chat's windows: the transcript above and the prompt below (split, vsplit or float),
-- their buffers and keymaps, and the winbar title (mode, edit mode, model, busy, cost). The
-- state table is kiln.chat's; this module only reads and sets its window and buffer fields.
local config = require('kiln.config')
local transcript = require('kiln.transcript')

local W = {}

function W.valid_buf(buf)
  return buf ~= nil and vim.api.nvim_buf_is_valid(buf)
end

function W.valid_win(win)
  return win ~= nil and vim.api.nvim_win_is_valid(win)
end

local valid_win = W.valid_win

--- Create the transcript and prompt buffers (once) with the chat's keymaps. `on` holds the
--- chat's `submit`, `stop` and `close`.
function W.ensure_buffers(S, on)
  S.buf = transcript.buffer()
  S.input = require('kiln.input').buffer(function(text, blocks, labels)
    return on.submit(text, blocks, labels)
  end, on.stop)
  for _, buf in ipairs({ S.buf, S.input }) do
    local function map(lhs, fn, desc)
      vim.keymap.set('n', lhs, fn, { buffer = buf, desc = 'Kiln: ' .. desc })
    end
    map('<C-c>', on.stop, 'stop the turn')
    map('q', on.close, 'close the chat')
    map('gm', function()
      require('kiln.commands').pick_mode()
    end, 'pick the permission and edit mode')
    map('gM', function()
      require('kiln.commands').pick_model()
    end, 'pick the model')
  end
  require('kiln.codeblock').map(S.buf)
end

function W.refresh_title(S)
  if not valid_win(S.win) then
    return
  end
  local parts = { 'Kiln' }
  local session = config.options.session or {}
  table.insert(parts, S.mode or session.mode or 'ask')
  if S.edit_mode or session.editMode then
    table.insert(parts, 'edits ' .. (S.edit_mode or session.editMode))
  end
  if session.model then
    table.insert(parts, session.model)
  end
  if S.busy then
    table.insert(parts, 'working… (:KilnStop)')
  end
  local cost = S.usage and S.usage.cost and S.usage.cost.amount
  if cost then
    table.insert(parts, string.format('$%.4f', cost))
  end
  -- A winbar is a statusline: `%{…}` in a model id (an OpenAI-compatible server's /models
  -- names them) would be evaluated, and a lone `%` is an error; each `%` shows as itself.
  vim.wo[S.win].winbar = (table.concat(parts, ' · '):gsub('%%', '%%%%'))
end

--- The float layout's two window configs for the editor's current size: the transcript, then
--- the prompt (both within the screen, however small it has become).
local function float_configs()
  local opts = config.options.chat
  local width = math.max(math.floor(vim.o.columns * math.max(opts.width, 0.6)), 10)
  width = math.min(width, vim.o.columns - 2)
  local height = math.floor(vim.o.lines * math.max(opts.height, 0.6))
  local input = math.max(math.min(opts.input_height, height - 6), 1)
  height = math.max(math.min(height, vim.o.lines - 2), input + 5)
  local row = math.max(math.floor((vim.o.lines - height) / 2), 0)
  local col = math.max(math.floor((vim.o.columns - width) / 2), 0)
  local transcript = {
    relative = 'editor',
    width = width,
    height = math.max(height - input - 4, 1),
    row = row,
    col = col,
  }
  local prompt = {
    relative = 'editor',
    width = width,
    height = input,
    row = row + height - input - 2,
    col = col,
  }
  return transcript, prompt
end

local function open_windows(S, layout)
  local opts = config.options.chat
  if layout == 'float' then
    local transcript_cfg, prompt_cfg = float_configs()
    S.win = vim.api.nvim_open_win(
      S.buf,
      false,
      vim.tbl_extend('force', transcript_cfg, { border = 'rounded', title = ' Kiln ' })
    )
    local bordered = vim.tbl_extend('force', prompt_cfg, { border = 'rounded' })
    S.input_win = vim.api.nvim_open_win(S.input, true, bordered)
    -- A resized terminal would leave the floats where they were, partly off the screen.
    vim.api.nvim_create_autocmd('VimResized', {
      group = vim.api.nvim_create_augroup('kiln.chat_float', { clear = true }),
      callback = function()
        if not (valid_win(S.win) and valid_win(S.input_win)) then
          return true -- the floats are gone: drop this autocmd
        end
        if vim.api.nvim_win_get_config(S.win).relative == '' then
          return true -- reopened as splits
        end
        local t, p = float_configs()
        vim.api.nvim_win_set_config(S.win, t)
        vim.api.nvim_win_set_config(S.input_win, p)
      end,
    })
  else
    if layout == 'split' then
      vim.cmd(string.format('botright %dsplit', math.floor(vim.o.lines * opts.height)))
    else
      vim.cmd(string.format('botright %dvsplit', math.floor(vim.o.columns * opts.width)))
    end
    S.win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(S.win, S.buf)
    vim.cmd(string.format('belowright %dsplit', opts.input_height))
    S.input_win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(S.input_win, S.input)
  end
  for _, win in ipairs({ S.win, S.input_win }) do
    vim.wo[win].wrap = true
    vim.wo[win].number = false
    vim.wo[win].relativenumber = false
    vim.wo[win].signcolumn = 'no'
  end
  vim.wo[S.win].linebreak = true
end

--- Open (or focus) the windows. `layout`: 'vsplit', 'split' or 'float' (default from setup).
function W.open(S, layout, on)
  W.ensure_buffers(S, on)
  if not (valid_win(S.win) and valid_win(S.input_win)) then
    W.close(S)
    open_windows(S, layout or config.options.chat.layout)
  end
  vim.api.nvim_set_current_win(S.input_win)
  W.refresh_title(S)
  transcript.set_window(S.win)
end

function W.close(S)
  for _, win in ipairs({ S.input_win, S.win }) do
    if valid_win(win) and #vim.api.nvim_list_wins() > 1 then
      vim.api.nvim_win_close(win, true)
    end
  end
  S.win, S.input_win = nil, nil
  transcript.set_window(nil)
end

return W
