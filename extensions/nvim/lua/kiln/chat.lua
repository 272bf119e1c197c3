-- The chat: a transcript buffer (plan on top, then messages, streamed answer text and one
-- line per tool call with its status) and a prompt buffer below it. One session per editor;
-- :KilnChat reopens the same conversation.
local client = require('kiln.client')
local config = require('kiln.config')

local M = {}

local ns = vim.api.nvim_create_namespace('kiln.chat')

local ICONS = { pending = '?', in_progress = '…', completed = '✓', failed = '✗' }

---@class kiln.ChatState
local S = {
  buf = nil, -- transcript buffer
  input = nil, -- prompt buffer
  win = nil,
  input_win = nil,
  session_id = nil,
  edit_mode = nil,
  busy = false,
  streaming = false, -- the last transcript line is open for more answer text
  plan_lines = 0,
  tools = {}, -- toolCallId -> { mark = extmark id, title = string }
  usage = nil,
}
M.state = S

--- The last kiln/session/prompt result (or error), for callers and tests.
M.last_result = nil

local function valid_buf(buf)
  return buf ~= nil and vim.api.nvim_buf_is_valid(buf)
end

local function valid_win(win)
  return win ~= nil and vim.api.nvim_win_is_valid(win)
end

local function ensure_buffers()
  if not valid_buf(S.buf) then
    S.buf = vim.api.nvim_create_buf(false, true)
    vim.bo[S.buf].buftype = 'nofile'
    vim.bo[S.buf].bufhidden = 'hide'
    vim.bo[S.buf].swapfile = false
    vim.bo[S.buf].filetype = 'kiln-chat'
    vim.bo[S.buf].modifiable = false
    pcall(vim.api.nvim_buf_set_name, S.buf, 'kiln://chat')
    S.plan_lines, S.tools, S.streaming = 0, {}, false
  end
  if not valid_buf(S.input) then
    S.input = vim.api.nvim_create_buf(false, true)
    vim.bo[S.input].buftype = 'prompt'
    vim.bo[S.input].bufhidden = 'hide'
    vim.bo[S.input].swapfile = false
    pcall(vim.api.nvim_buf_set_name, S.input, 'kiln://prompt')
    vim.fn.prompt_setprompt(S.input, 'kiln> ')
    vim.fn.prompt_setcallback(S.input, function(text)
      if vim.trim(text) ~= '' then
        M.send(text)
      end
    end)
    vim.fn.prompt_setinterrupt(S.input, M.stop)
  end
  for _, buf in ipairs({ S.buf, S.input }) do
    vim.keymap.set('n', '<C-c>', M.stop, { buffer = buf, desc = 'Kiln: stop the turn' })
    vim.keymap.set('n', 'q', M.close, { buffer = buf, desc = 'Kiln: close the chat' })
  end
end

--- Replace lines [first, last) of the transcript (the buffer stays read-only to the user).
local function set_lines(first, last, lines)
  vim.bo[S.buf].modifiable = true
  vim.api.nvim_buf_set_lines(S.buf, first, last, false, lines)
  vim.bo[S.buf].modifiable = false
end

local function scroll()
  if valid_win(S.win) then
    vim.api.nvim_win_set_cursor(S.win, { vim.api.nvim_buf_line_count(S.buf), 0 })
  end
end

local function is_empty()
  local n = vim.api.nvim_buf_line_count(S.buf)
  return n == 1 and vim.api.nvim_buf_get_lines(S.buf, 0, 1, false)[1] == ''
end

--- Append whole lines at the end; returns the 0-based index of the first one.
local function append(lines)
  ensure_buffers()
  S.streaming = false
  local at = vim.api.nvim_buf_line_count(S.buf)
  if is_empty() then
    set_lines(0, 1, lines)
    at = 0
  else
    set_lines(at, at, lines)
  end
  scroll()
  return at
end

--- Append streamed text to the open answer line, starting new lines at newlines.
local function stream(text)
  ensure_buffers()
  local parts = vim.split(text, '\n', { plain = true })
  if not S.streaming then
    append({ '' })
    S.streaming = true
  end
  local last = vim.api.nvim_buf_line_count(S.buf) - 1
  local current = vim.api.nvim_buf_get_lines(S.buf, last, last + 1, false)[1] or ''
  parts[1] = current .. parts[1]
  set_lines(last, last + 1, parts)
  scroll()
end

local function render_plan(entries)
  local lines = {}
  if entries and #entries > 0 then
    table.insert(lines, 'Plan:')
    local marks = { pending = '[ ]', in_progress = '[~]', completed = '[x]' }
    for _, e in ipairs(entries) do
      table.insert(lines, string.format('  %s %s', marks[e.status] or '[ ]', e.content or ''))
    end
    table.insert(lines, string.rep('─', 40))
  end
  ensure_buffers()
  if S.plan_lines == 0 and is_empty() then
    set_lines(0, 1, #lines > 0 and lines or { '' })
  else
    set_lines(0, S.plan_lines, lines)
  end
  S.plan_lines = #lines
end

local function tool_line(id)
  local tool = S.tools[id]
  local icon = ICONS[tool.status] or '•'
  return string.format('  %s %s%s', icon, tool.title, tool.note and (' — ' .. tool.note) or '')
end

local function update_tool(id, fields)
  local tool = S.tools[id]
  if not tool then
    tool = { title = fields.title or id, status = 'in_progress' }
    S.tools[id] = tool
    local at = append({ '' })
    -- Left gravity at column 0: rewriting the line's text keeps the mark on it.
    tool.mark = vim.api.nvim_buf_set_extmark(S.buf, ns, at, 0, { right_gravity = false })
  end
  tool.title = fields.title or tool.title
  tool.status = fields.status or tool.status
  tool.note = fields.note or tool.note
  local row = vim.api.nvim_buf_get_extmark_by_id(S.buf, ns, tool.mark, {})[1]
  if row then
    local old = vim.api.nvim_buf_get_lines(S.buf, row, row + 1, false)[1] or ''
    vim.bo[S.buf].modifiable = true
    vim.api.nvim_buf_set_text(S.buf, row, 0, row, #old, { tool_line(id) })
    vim.bo[S.buf].modifiable = false
  end
end

local function first_text(content)
  for _, block in ipairs(content or {}) do
    local inner = block.content
    if block.type == 'content' and type(inner) == 'table' and inner.text then
      return (vim.split(inner.text, '\n', { plain = true })[1] or '')
    end
  end
end

--- Handler for kiln/session/update notifications.
function M.on_update(params)
  if S.session_id and params.sessionId ~= S.session_id then
    return
  end
  local u = params.update or {}
  local kind = u.sessionUpdate
  if kind == 'agent_message_chunk' then
    stream(u.content and u.content.text or '')
  elseif kind == 'user_message_chunk' then
    append({ '## You', u.content and u.content.text or '', '' })
  elseif kind == 'tool_call' then
    update_tool(u.toolCallId, { title = u.title, status = u.status or 'in_progress' })
  elseif kind == 'tool_call_update' then
    local meta = u._meta or {}
    if u.kind == 'edit' and meta.proposalId then
      local note = S.edit_mode == 'deferred' and 'edit proposed (review with :KilnEdits)'
        or 'edit proposed'
      update_tool(u.toolCallId, { note = note })
    else
      local note = u.status == 'failed' and first_text(u.content) or nil
      update_tool(u.toolCallId, { status = u.status, note = note })
    end
  elseif kind == 'plan' then
    render_plan(u.entries)
  elseif kind == 'usage_update' then
    S.usage = u
    M.refresh_title()
  elseif kind == 'refusal' then
    append({ string.format('  ⊘ %s refused: %s', u.tool or 'tool', u.reason or '') })
  elseif kind == 'status' then
    append({ '[kiln] ' .. (u.text or '') })
  elseif kind == 'error' then
    local hint = (u.hint and u.hint ~= '') and (' (' .. u.hint .. ')') or ''
    append({ '[error] ' .. (u.message or 'the model failed') .. hint })
  elseif kind == 'memory_proposal' then
    append({ '[kiln wants to remember] ' .. (u.text or '') })
  elseif kind == 'compaction' then
    append({ '[kiln] the context was compacted' })
  end
end

function M.on_permission(params)
  local tc = params.toolCall or {}
  if tc.toolCallId and S.tools[tc.toolCallId] then
    update_tool(tc.toolCallId, { status = 'pending', note = 'waiting for your answer' })
  else
    append({ '  ? ' .. (tc.title or 'permission requested') })
  end
end

function M.on_permission_answered(params, choice)
  local tc = params.toolCall or {}
  if tc.toolCallId and S.tools[tc.toolCallId] then
    local note = choice and choice:match('^allow') and 'allowed' or 'rejected'
    update_tool(tc.toolCallId, { status = 'in_progress', note = note })
  end
end

function M.refresh_title()
  if not valid_win(S.win) then
    return
  end
  local parts = { 'Kiln' }
  if S.busy then
    table.insert(parts, 'working… (:KilnStop)')
  end
  local cost = S.usage and S.usage.cost and S.usage.cost.amount
  if cost then
    table.insert(parts, string.format('$%.4f', cost))
  end
  vim.wo[S.win].winbar = table.concat(parts, ' · ')
end

local function open_windows(layout)
  local opts = config.options.chat
  if layout == 'float' then
    local width = math.floor(vim.o.columns * math.max(opts.width, 0.6))
    local height = math.floor(vim.o.lines * math.max(opts.height, 0.6))
    local row = math.floor((vim.o.lines - height) / 2)
    local col = math.floor((vim.o.columns - width) / 2)
    S.win = vim.api.nvim_open_win(S.buf, false, {
      relative = 'editor',
      width = width,
      height = height - opts.input_height - 2,
      row = row,
      col = col,
      border = 'rounded',
      title = ' Kiln ',
    })
    S.input_win = vim.api.nvim_open_win(S.input, true, {
      relative = 'editor',
      width = width,
      height = opts.input_height,
      row = row + height - opts.input_height,
      col = col,
      border = 'rounded',
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

--- Open (or focus) the chat. `layout`: 'vsplit', 'split' or 'float' (default from setup).
function M.open(layout)
  ensure_buffers()
  if not (valid_win(S.win) and valid_win(S.input_win)) then
    M.close()
    open_windows(layout or config.options.chat.layout)
  end
  vim.api.nvim_set_current_win(S.input_win)
  M.refresh_title()
  scroll()
end

function M.close()
  for _, win in ipairs({ S.input_win, S.win }) do
    if valid_win(win) and #vim.api.nvim_list_wins() > 1 then
      vim.api.nvim_win_close(win, true)
    end
  end
  S.win, S.input_win = nil, nil
end

--- Create the session if there is none yet, then call `cb(session_id)`.
local function with_session(cb)
  if S.session_id then
    return cb(S.session_id)
  end
  local c = client.get()
  if not c then
    return
  end
  local params = vim.tbl_extend('force', config.options.session or {}, { cwd = c.root_dir })
  client.request('kiln/session/new', params, function(err, result)
    if err then
      vim.notify(client.describe(err), vim.log.levels.ERROR)
      return
    end
    S.session_id, S.edit_mode = result.sessionId, result.editMode
    cb(S.session_id)
  end)
end

--- Send a prompt. `text` is shown in the transcript; `blocks` are extra prompt blocks
--- (e.g. a resource_link for a selection). `cb(err, result)` runs when the turn ends.
function M.send(text, blocks, cb)
  if S.busy then
    vim.notify('kiln: a turn is running; :KilnStop to cancel it', vim.log.levels.WARN)
    return false
  end
  if not client.get() then
    return false
  end
  ensure_buffers()
  local shown = { '## You' }
  vim.list_extend(shown, vim.split(text, '\n', { plain = true }))
  for _, b in ipairs(blocks or {}) do
    if b.type == 'resource_link' then
      local r = b.range
      local where = r and string.format(':%d-%d', r.start.line + 1, r['end'].line + 1) or ''
      table.insert(shown, '  @' .. (b.name or b.uri) .. where)
    end
  end
  vim.list_extend(shown, { '', '## Kiln' })
  append(shown)
  S.busy = true
  M.last_result = nil
  M.refresh_title()
  local prompt = { { type = 'text', text = text } }
  vim.list_extend(prompt, blocks or {})
  with_session(function(sid)
    client.request('kiln/session/prompt', { sessionId = sid, prompt = prompt }, function(err, res)
      S.busy = false
      M.last_result = err and { error = err } or res
      if err then
        append({ '[error] ' .. client.describe(err) })
      else
        append({ '— ' .. tostring(res.stopReason), '' })
      end
      M.refresh_title()
      if cb then
        cb(err, res)
      end
    end)
  end)
  return true
end

--- Cancel the running turn (kiln/session/cancel); the prompt then ends with "cancelled".
function M.stop()
  if not (S.session_id and S.busy) then
    vim.notify('kiln: no turn is running', vim.log.levels.INFO)
    return false
  end
  client.notify('kiln/session/cancel', { sessionId = S.session_id })
  require('kiln.review').withdraw_all()
  return true
end

--- Change the session's permission mode and/or edit mode (`{ mode = ..., editMode = ... }`);
--- without a session yet, the values apply to the next one.
function M.set_mode(modes, cb)
  local function done(err, result)
    if err then
      vim.notify(client.describe(err), vim.log.levels.ERROR)
    else
      S.edit_mode = result.editMode or S.edit_mode
      vim.notify(string.format('kiln: mode %s, edit mode %s', result.mode, result.editMode))
    end
    if cb then
      cb(err, result)
    end
  end
  if not S.session_id then
    local session = vim.tbl_extend('force', config.options.session or {}, modes)
    config.options.session = session
    return done(nil, { mode = session.mode or '(default)', editMode = session.editMode or '(default)' })
  end
  local params = vim.tbl_extend('force', modes, { sessionId = S.session_id })
  client.request('kiln/session/setMode', params, done)
end

--- The server went away: a running turn will never answer, so end it here. The session is
--- stored by the server; the next prompt starts a new one.
function M.on_exit(code, signal)
  require('kiln.review').withdraw_all()
  local was_busy = S.busy
  S.busy, S.session_id = false, nil
  if code ~= 0 or was_busy then
    local msg = string.format('kiln: the server exited (code %s, signal %s); see :LspLog', code, signal)
    if valid_buf(S.buf) then
      append({ '[error] ' .. msg })
    end
    if was_busy then
      M.last_result = { error = { message = msg } }
    end
    vim.notify(msg, vim.log.levels.WARN)
  end
  M.refresh_title()
end

--- Start a fresh session the next time a prompt is sent, with an empty transcript.
function M.reset()
  S.session_id, S.edit_mode, S.busy, S.usage = nil, nil, false, nil
  if valid_buf(S.buf) then
    set_lines(0, -1, { '' })
    vim.api.nvim_buf_clear_namespace(S.buf, ns, 0, -1)
  end
  S.plan_lines, S.tools, S.streaming = 0, {}, false
end

--- The transcript as a list of lines.
function M.lines()
  if not valid_buf(S.buf) then
    return {}
  end
  return vim.api.nvim_buf_get_lines(S.buf, 0, -1, false)
end

return M
