-- The chat transcript buffer: the plan on top (replaced in place), then messages, streamed
-- answer text, and one line per tool call that is rewritten as its status changes.
local M = {}

local ns = vim.api.nvim_create_namespace('kiln.transcript')
local welcome_ns = vim.api.nvim_create_namespace('kiln.welcome')

-- Shown (as virtual text, not buffer lines) while the transcript is empty.
M.WELCOME = {
  'Kiln — ask about this workspace. Type below and press <CR> to send;',
  '<S-CR> or <C-j> for a new line, <C-c> stops a turn.',
  '',
  '  @name       mention a file, folder or symbol (completion from the index)',
  '  /command    /clear /compact /mode /model /context, or an installed skill',
  '  gm / gM     pick the mode / the model        q  close the chat',
  '  gy gi ga    copy / insert / apply the code block under the cursor',
  '  :KilnAdd    add the selection as context     :KilnEdit  edit the selection',
  '  :KilnEdits  review deferred edits            :help kiln',
}

local ICONS = { pending = '?', in_progress = '…', completed = '✓', failed = '✗', stopped = '⊘' }

local S = {
  buf = nil,
  win = nil, -- the window showing it, scrolled to the end as text arrives
  streaming = false, -- the last line is open for more answer text
  plan_lines = 0,
  tools = {}, -- toolCallId -> { mark = extmark id, title, status, note }
}

--- The transcript buffer, created on first use.
function M.buffer()
  if S.buf == nil or not vim.api.nvim_buf_is_valid(S.buf) then
    S.buf = vim.api.nvim_create_buf(false, true)
    vim.bo[S.buf].buftype = 'nofile'
    vim.bo[S.buf].bufhidden = 'hide'
    vim.bo[S.buf].swapfile = false
    vim.bo[S.buf].filetype = 'kiln-chat'
    vim.bo[S.buf].modifiable = false
    pcall(vim.api.nvim_buf_set_name, S.buf, 'kiln://chat')
    -- The transcript is markdown ("## You", the model's answers): tree-sitter's markdown parser
    -- highlights it and injects each fenced block's language when that parser is installed.
    pcall(vim.treesitter.language.register, 'markdown', 'kiln-chat')
    if pcall(vim.treesitter.start, S.buf, 'markdown') then
      vim.b[S.buf].kiln_treesitter = true
    end
    S.plan_lines, S.tools, S.streaming = 0, {}, false
    M.welcome(true)
  end
  return S.buf
end

--- Show (or hide) the welcome text of an empty transcript.
function M.welcome(show)
  vim.api.nvim_buf_clear_namespace(S.buf, welcome_ns, 0, -1)
  if show then
    local lines = {}
    for _, l in ipairs(M.WELCOME) do
      table.insert(lines, { { l, 'Comment' } })
    end
    vim.api.nvim_buf_set_extmark(S.buf, welcome_ns, 0, 0, { virt_lines = lines })
  end
end

--- Follow the end of the transcript in `win` (nil: not shown).
function M.set_window(win)
  S.win = win
  if win then
    M.scroll()
  end
end

--- Replace lines [first, last) of the transcript (the buffer stays read-only to the user).
local function set_lines(first, last, lines)
  vim.api.nvim_buf_clear_namespace(S.buf, welcome_ns, 0, -1)
  vim.bo[S.buf].modifiable = true
  vim.api.nvim_buf_set_lines(S.buf, first, last, false, lines)
  vim.bo[S.buf].modifiable = false
end

local function shown()
  return S.win and vim.api.nvim_win_is_valid(S.win) and vim.api.nvim_win_get_buf(S.win) == S.buf
end

function M.scroll()
  if shown() then
    vim.api.nvim_win_set_cursor(S.win, { vim.api.nvim_buf_line_count(S.buf), 0 })
  end
end

--- Whether the window follows the end: its cursor is on the last line. A user who moved up to
--- read earlier output is left where they are while more text arrives.
local function following()
  return not shown()
    or vim.api.nvim_win_get_cursor(S.win)[1] >= vim.api.nvim_buf_line_count(S.buf)
end

local function is_empty()
  local n = vim.api.nvim_buf_line_count(S.buf)
  return n == 1 and vim.api.nvim_buf_get_lines(S.buf, 0, 1, false)[1] == ''
end

--- `text` on one line: a newline (a multi-line command in a tool title) shows as ⏎.
function M.one_line(text)
  return (tostring(text or ''):gsub('\r?\n', ' ⏎ '))
end

--- Lines of `lines` split at their newlines: a buffer line cannot hold one, and messages
--- from the server and the model (errors, notes, refusals) may have several lines.
local function split_lines(lines)
  local out = {}
  for _, line in ipairs(lines) do
    vim.list_extend(out, vim.split(tostring(line), '\r?\n'))
  end
  return out
end

--- Append whole lines at the end; returns the 0-based index of the first one.
function M.append(lines)
  lines = split_lines(lines)
  M.buffer()
  local follow = following()
  S.streaming, S.thinking, S.asked = false, false, false
  local at = vim.api.nvim_buf_line_count(S.buf)
  if is_empty() then
    set_lines(0, 1, lines)
    at = 0
  else
    set_lines(at, at, lines)
  end
  if follow then
    M.scroll()
  end
  return at
end

--- Append streamed text to the open answer line, starting new lines at newlines.
function M.stream(text)
  M.buffer()
  local follow = following()
  local parts = vim.split(text, '\n', { plain = true })
  if not S.streaming then
    -- after thinking, a blank line ends its quote
    M.append(S.thinking and { '', '' } or { '' })
    S.streaming = true
  end
  local last = vim.api.nvim_buf_line_count(S.buf) - 1
  local current = vim.api.nvim_buf_get_lines(S.buf, last, last + 1, false)[1] or ''
  parts[1] = current .. parts[1]
  -- Windows line ends: a line that is complete loses its \r (a \r\n split between two
  -- chunks included, since the \r then ends the line the next chunk completes).
  for i = 1, #parts - 1 do
    parts[i] = parts[i]:gsub('\r$', '')
  end
  set_lines(last, last + 1, parts)
  if follow then
    M.scroll()
  end
end

--- Streamed thinking (reasoning the model sent apart from its answer): a `> ` quote under a
--- `> (thinking)` line, kept out of the answer that follows.
function M.think(text)
  M.buffer()
  if not S.thinking then
    M.append({ '> (thinking)', '> ' })
    S.thinking = true
  end
  local follow = following()
  local parts = vim.split((text:gsub('\r', '')), '\n', { plain = true })
  local last = vim.api.nvim_buf_line_count(S.buf) - 1
  parts[1] = (vim.api.nvim_buf_get_lines(S.buf, last, last + 1, false)[1] or '') .. parts[1]
  for i = 2, #parts do
    parts[i] = '> ' .. parts[i]
  end
  set_lines(last, last + 1, parts)
  if follow then
    M.scroll()
  end
end

function M.plan(entries)
  local lines = {}
  if entries and #entries > 0 then
    table.insert(lines, 'Plan:')
    local marks = { pending = '[ ]', in_progress = '[~]', completed = '[x]' }
    for _, e in ipairs(entries) do
      local line = string.format('  %s %s', marks[e.status] or '[ ]', e.content or '')
      table.insert(lines, M.one_line(line))
    end
    table.insert(lines, string.rep('─', 40))
  end
  M.buffer()
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
  local note = tool.note and (' — ' .. tool.note) or ''
  return M.one_line(string.format('  %s %s%s', icon, tool.title, note))
end

--- Add or rewrite the line of tool call `id` (`fields`: title, status, note).
function M.tool(id, fields)
  local tool = S.tools[id]
  if not tool then
    tool = { title = fields.title or id, status = 'in_progress' }
    S.tools[id] = tool
    local at = M.append({ '' })
    -- Left gravity at column 0: rewriting the line's text keeps the mark on it.
    tool.mark = vim.api.nvim_buf_set_extmark(S.buf, ns, at, 0, { right_gravity = false })
  end
  tool.title = fields.title or tool.title
  tool.status = fields.status or tool.status
  tool.note = fields.note or tool.note
  tool.kind = fields.kind or tool.kind
  local row = vim.api.nvim_buf_get_extmark_by_id(S.buf, ns, tool.mark, {})[1]
  if row then
    local old = vim.api.nvim_buf_get_lines(S.buf, row, row + 1, false)[1] or ''
    vim.bo[S.buf].modifiable = true
    vim.api.nvim_buf_set_text(S.buf, row, 0, row, #old, { tool_line(id) })
    vim.bo[S.buf].modifiable = false
  end
end

--- A short reason from a failed tool's output: its `message:` line when the agent's error
--- report has one, else the first line; at most 160 characters.
local function failure_text(content)
  for _, block in ipairs(content or {}) do
    local inner = block.content
    if block.type == 'content' and type(inner) == 'table' and inner.text then
      local lines = vim.split(inner.text, '\n', { plain = true, trimempty = true })
      local text = lines[1] or ''
      for _, line in ipairs(lines) do
        local message = line:match('^message:%s*(.+)$')
        if message then
          text = message
          break
        end
      end
      return #text > 160 and (text:sub(1, 157) .. '...') or text
    end
  end
end

--- A replayed question: its text opens a `## You` block; a file or selection attached to it
--- (a `resource` or `resource_link` chunk right after it) is an `@path` line inside that block,
--- as the question showed when it was asked.
function M.question(content)
  local uri = content.type == 'resource' and (content.resource or {}).uri or content.uri
  if content.type ~= 'text' and type(uri) == 'string' then
    local name = uri:match('^file:') and vim.uri_to_fname(uri) or uri
    local root = require('kiln.client').current_root()
    name = root and vim.fs.relpath(root, name) or name
    if S.asked then
      local at = vim.api.nvim_buf_line_count(S.buf) - 2 -- before the blank and `## Kiln`
      set_lines(at, at, { '  @' .. name })
      return
    end
    return M.append({ '## You', '  @' .. name, '', '## Kiln' })
  end
  local lines = { '## You' }
  vim.list_extend(lines, vim.split(content.text or '', '\n', { plain = true }))
  vim.list_extend(lines, { '', '## Kiln' })
  M.append(lines)
  S.asked = true
end

--- Render one `kiln/session/update` payload; `edit_mode` words the note on proposed edits.
function M.render(u, edit_mode)
  local kind = u.sessionUpdate
  if kind == 'agent_message_chunk' then
    M.stream(u.content and u.content.text or '')
  elseif kind == 'agent_thought_chunk' then
    M.think(u.content and u.content.text or '')
  elseif kind == 'user_message_chunk' then
    M.question(u.content or {})
  elseif kind == 'tool_call' then
    local shown = S.tools[u.toolCallId]
    if shown and shown.status ~= 'pending' and shown.status ~= 'in_progress' then
      -- A new call with the id of one that ended: a model numbers its calls per session, and
      -- the transcript outlives a session (a restarted server); the old line stays as it is.
      S.tools[u.toolCallId] = nil
    end
    M.tool(u.toolCallId, { title = u.title, status = u.status or 'in_progress', kind = u.kind })
  elseif kind == 'tool_call_update' then
    local meta = u._meta or {}
    if u.kind == 'edit' and meta.proposalId then
      local note = edit_mode == 'deferred' and 'edit proposed (review with :KilnEdits)'
        or 'edit proposed'
      M.tool(u.toolCallId, { note = note })
    elseif u.status == 'failed' and type(u.rawOutput) == 'table' and u.rawOutput.stopReason then
      -- the server closed a call the turn stopped before it finished (cancel, a limit)
      M.tool(u.toolCallId, { status = 'stopped', note = u.rawOutput.stopReason })
    else
      local note = u.status == 'failed' and failure_text(u.content) or nil
      local tool = S.tools[u.toolCallId]
      if u.status == 'completed' and tool and tool.kind == 'edit' and edit_mode ~= 'deferred' then
        note = 'applied'
      end
      M.tool(u.toolCallId, { status = u.status, note = note })
    end
  elseif kind == 'plan' then
    M.plan(u.entries)
  elseif kind == 'refusal' then
    M.append({ string.format('  ⊘ %s refused: %s', u.tool or 'tool', u.reason or '') })
  elseif kind == 'status' then
    M.append({ '[kiln] ' .. (u.text or '') })
  elseif kind == 'error' then
    local hint = (u.hint and u.hint ~= '') and (' (' .. u.hint .. ')') or ''
    M.append({ '[error] ' .. (u.message or 'the model failed') .. hint })
  elseif kind == 'memory_proposal' then
    M.append({ '[kiln wants to remember] ' .. (u.text or '') })
  elseif kind == 'compaction' then
    M.append({ '[kiln] the context was compacted' })
  end
end

--- The turn ended: a tool line still waiting (a review withdrawn by :KilnStop, a command
--- killed) no longer shows the running or question icon.
function M.settle(reason)
  for id, tool in pairs(S.tools) do
    if tool.status == 'pending' or tool.status == 'in_progress' then
      M.tool(id, { status = 'stopped', note = reason })
    end
  end
end

function M.has_tool(id)
  return id ~= nil and S.tools[id] ~= nil
end

--- Empty the transcript (a new session).
function M.clear()
  if S.buf and vim.api.nvim_buf_is_valid(S.buf) then
    set_lines(0, -1, { '' })
    vim.api.nvim_buf_clear_namespace(S.buf, ns, 0, -1)
    M.welcome(true)
  end
  S.plan_lines, S.tools, S.streaming, S.thinking, S.asked = 0, {}, false, false, false
end

--- The transcript as a list of lines.
function M.lines()
  if S.buf == nil or not vim.api.nvim_buf_is_valid(S.buf) then
    return {}
  end
  return vim.api.nvim_buf_get_lines(S.buf, 0, -1, false)
end

return M
