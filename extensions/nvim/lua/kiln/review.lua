-- Permission requests and the plugin's own diff review. Neovim does not advertise
-- change-annotation support, so an edit is shown here as a unified diff before the server
-- applies it; other requests (commands, risky actions) go through vim.ui.select.
local config = require('kiln.config')

local M = {}

--- Open reviews, oldest first: { title, buf, win, tab, decide = fun(option_id|nil),
--- request_id, session_id } (the last two for server permission requests).
M.pending = {}

local KEYS = {
  { 'a', 'allow_once', 'accept' },
  { 'A', 'allow_always', 'accept all edits this session' },
  { 'r', 'reject_once', 'reject' },
  { 'R', 'reject_always', 'reject all edits this session' },
  { 'q', 'reject_once', 'reject and close' },
}

--- A diff's text (a new file's oldText is JSON null).
local function str(v)
  return type(v) == 'string' and v or ''
end

local function option_id(options, kind)
  for _, opt in ipairs(options or {}) do
    if opt.kind == kind or opt.optionId == kind then
      return opt.optionId
    end
  end
end

--- True when `choice` is an allow option (by id or kind): only then can kept hunks apply.
local function accepts(options, choice)
  for _, opt in ipairs(options or {}) do
    if opt.optionId == choice then
      return (opt.kind or choice):match('^allow') ~= nil
    end
  end
  return choice:match('^allow') ~= nil
end

--- Unified diff lines for one `diff` content block (whole-file texts).
function M.diff_lines(diff, root)
  local path = diff.path or '?'
  if root and path:sub(1, #root + 1) == root .. '/' then
    path = path:sub(#root + 2)
  end
  local old, new = str(diff.oldText), str(diff.newText)
  if old ~= '' and old:sub(-1) ~= '\n' then
    old = old .. '\n'
  end
  if new ~= '' and new:sub(-1) ~= '\n' then
    new = new .. '\n'
  end
  local body = vim.diff(old, new, { result_type = 'unified', ctxlen = 3 }) --[[@as string]]
  local lines = { '--- a/' .. path, '+++ b/' .. path }
  if diff.oldText == nil or diff.oldText == vim.NIL then
    lines[1] = '--- /dev/null (new file)'
  end
  vim.list_extend(lines, vim.split(body, '\n', { trimempty = true }))
  return lines
end

local function close(review)
  for i, r in ipairs(M.pending) do
    if r == review then
      table.remove(M.pending, i)
      break
    end
  end
  if review.win and vim.api.nvim_win_is_valid(review.win) then
    if review.tab and #vim.api.nvim_list_tabpages() > 1 then
      pcall(vim.cmd.tabclose, vim.api.nvim_tabpage_get_number(review.tab))
    else
      pcall(vim.api.nvim_win_close, review.win, true)
    end
  end
  if review.buf and vim.api.nvim_buf_is_valid(review.buf) then
    pcall(vim.api.nvim_buf_delete, review.buf, { force = true })
  end
end

local function open_window(buf, title)
  if config.options.review.layout == 'float' then
    local width = math.floor(vim.o.columns * 0.8)
    local height = math.floor(vim.o.lines * 0.7)
    local win = vim.api.nvim_open_win(buf, true, {
      relative = 'editor',
      width = width,
      height = height,
      row = math.floor((vim.o.lines - height) / 2),
      col = math.floor((vim.o.columns - width) / 2),
      border = 'rounded',
      title = ' ' .. title .. ' ',
    })
    return win, nil
  end
  vim.cmd('tab split')
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  return win, vim.api.nvim_get_current_tabpage()
end

--- Show a diff review; `decide(option_id)` is called once, with nil when the review is
--- withdrawn. `meta` is the request's `_meta` (fromExternal, reason). Returns the review (tests and the chat use `M.resolve`).
function M.open_diff(title, diffs, options, decide, meta, per_hunk)
  local root = require('kiln.client').current_root()
  local hunks = require('kiln.hunks')
  -- Per hunk: one diff reviewed through a permission request or a deferred edit (the answer
  -- can carry the kept text).
  local single = per_hunk and #diffs == 1 and diffs[1] or nil
  local ticks, headers, first = {}, {}, 0
  local one_line = require('kiln.transcript').one_line
  local lines = { one_line('Kiln wants to edit: ' .. title), '' }
  meta = meta or {}
  if meta.fromExternal then
    table.insert(lines, 1, '!! Asked while the agent was acting on external content (web pages,')
    table.insert(lines, 2, '!! command output). Check that you asked for this change.')
  end
  if type(meta.reason) == 'string' and meta.reason ~= '' then
    table.insert(lines, one_line('Reason: ' .. meta.reason))
  end
  local help = {}
  for _, key in ipairs(KEYS) do
    if option_id(options, key[2]) then
      table.insert(help, key[1] .. ' ' .. key[3])
    end
  end
  if single then
    table.insert(help, 's keep/drop the hunk under the cursor')
  end
  table.insert(lines, 'Keys: ' .. table.concat(help, ' · '))
  table.insert(lines, '')
  for _, diff in ipairs(diffs) do
    if diff == single then
      local head = M.diff_lines(diff, root)
      vim.list_extend(lines, { head[1], head[2] })
      first = #lines
      local body
      body, headers = hunks.render(str(diff.oldText), str(diff.newText), ticks)
      vim.list_extend(lines, body)
    else
      vim.list_extend(lines, M.diff_lines(diff, root))
    end
    table.insert(lines, '')
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].filetype = 'diff'
  pcall(vim.api.nvim_buf_set_name, buf, 'kiln://review/' .. buf)
  local review = { title = title, buf = buf, options = options }
  review.decide = function(choice)
    if review.done then
      return
    end
    review.done = true
    close(review)
    local kept = nil
    if single and choice and accepts(options, choice) and vim.tbl_contains(ticks, false) then
      kept = hunks.keep(str(single.oldText), str(single.newText), ticks)
    end
    decide(choice, kept)
  end
  if single then
    local hs = hunks.hunks(str(single.oldText), str(single.newText))
    vim.keymap.set('n', 's', function()
      local row = vim.api.nvim_win_get_cursor(0)[1]
      local at = nil
      for i, line in ipairs(headers) do
        if first + line <= row then
          at = i
        end
      end
      if not at then
        return
      end
      ticks[at] = ticks[at] == false
      vim.bo[buf].modifiable = true
      local header = first + headers[at]
      vim.api.nvim_buf_set_lines(buf, header - 1, header, false, { hunks.header(at, hs[at], ticks[at] ~= false) })
      vim.bo[buf].modifiable = false
    end, { buffer = buf, nowait = true, desc = 'Kiln: keep or drop this hunk' })
  end
  review.win, review.tab = open_window(buf, title)
  -- The chat's prompt is in Insert mode; the review keys (a, r, q) are Normal-mode keys.
  vim.cmd('stopinsert')
  -- Closing the review any other way (:q, :bwipe) counts as "reject".
  vim.api.nvim_create_autocmd('BufWipeout', {
    buffer = buf,
    once = true,
    callback = function()
      vim.schedule(function()
        review.decide(nil)
      end)
    end,
  })
  for _, key in ipairs(KEYS) do
    local id = option_id(options, key[2])
    if id then
      vim.keymap.set('n', key[1], function()
        review.decide(id)
      end, { buffer = buf, nowait = true, desc = 'Kiln: ' .. key[3] })
    end
  end
  table.insert(M.pending, review)
  return review
end

--- Answer the oldest open review: 'accept', 'accept_all', 'reject', 'reject_all' or an
--- optionId. Returns false when nothing is pending.
function M.resolve(answer)
  local review = M.pending[1]
  if not review then
    return false
  end
  local kinds = {
    accept = 'allow_once',
    accept_all = 'allow_always',
    reject = 'reject_once',
    reject_all = 'reject_always',
  }
  review.decide(option_id(review.options, kinds[answer] or answer) or answer)
  return true
end

local function answer(choice)
  if not choice then
    return { outcome = { outcome = 'cancelled' } }
  end
  return { outcome = { outcome = 'selected', optionId = choice } }
end

local function diffs_of(tool_call)
  local out = {}
  for _, block in ipairs(tool_call.content or {}) do
    if block.type == 'diff' then
      table.insert(out, block)
    end
  end
  return out
end

--- What the question itself shows of a long command: its start. The prompt printed it all, and
--- a 10,000-character line filled screens of "-- More --" before the choices; the whole of it
--- goes to the chat's transcript, where it can be read before answering.
local SHOWN_CHARS, SHOWN_LINES = 400, 12
local function shown_detail(detail)
  local lines = vim.split(detail, '\r?\n')
  local chars = vim.fn.strchars(detail)
  if chars <= SHOWN_CHARS and #lines <= SHOWN_LINES then
    return detail
  end
  require('kiln.transcript').append(
    vim.list_extend({ '[kiln] asked to approve, in full:' }, vim.list_extend(lines, { '' }))
  )
  local head = table.concat(vim.list_slice(lines, 1, SHOWN_LINES), '\n')
  head = vim.fn.strcharpart(head, 0, SHOWN_CHARS)
  return string.format('%s… (%d characters in all: the whole of it is in the chat)', head, chars)
end

--- Ask with vim.ui.select; `decide(option_id|nil)`.
local function select(tool_call, options, decide)
  local meta = tool_call._meta or {}
  local prompt = 'Kiln: ' .. (tool_call.title or 'permission')
  if type(meta.reason) == 'string' and meta.reason ~= '' then
    prompt = prompt .. ' (' .. meta.reason .. ')'
  end
  -- What a yes approves, as the server words it (the command line, one `- ` line per part the
  -- shell grammar found, "with network access"; or the memory text); an older server sent
  -- only the raw command.
  local detail = type(meta.detail) == 'string' and meta.detail or nil
  if not detail and tool_call.rawInput and tool_call.rawInput.command then
    detail = '$ ' .. tostring(tool_call.rawInput.command)
  end
  if detail and detail ~= '' then
    prompt = prompt .. '\n  ' .. (shown_detail(detail):gsub('\r?\n', '\n  '))
  end
  if meta.fromExternal then
    prompt = '[after reading external content] ' .. prompt
  end
  vim.ui.select(options, {
    prompt = prompt,
    kind = 'kiln.permission',
    format_item = function(opt)
      return opt.name or opt.optionId
    end,
  }, function(opt)
    decide(opt and opt.optionId or nil)
  end)
end

--- Send buffer changes Neovim is still debouncing before the answer, so the server compares
--- the proposal with what the user sees and reports "changed" rather than "rejected".
--- (Neovim flushes them before its own requests, not before answers; the module is internal,
--- hence the pcall.)
local function flush_changes(ctx)
  local client = ctx and vim.lsp.get_client_by_id(ctx.client_id)
  if client then
    pcall(function()
      require('vim.lsp._changetracking').flush(client)
    end)
  end
end

--- Handler for kiln/session/requestPermission. Runs inside the RPC coroutine Neovim gives
--- server requests, so it can wait for the user without blocking the editor.
function M.on_permission(params, ctx)
  local tool_call = params.toolCall or {}
  local options = params.options or {}
  local co, is_main = coroutine.running()
  if not co or is_main then
    return answer(nil)
  end
  require('kiln.chat').on_permission(params)
  local waiting = true
  local function decide(choice, kept)
    if waiting then
      waiting = false
      vim.schedule(function()
        coroutine.resume(co, choice, kept)
      end)
    end
  end
  local diffs = diffs_of(tool_call)
  local entry
  if tool_call.kind == 'edit' and #diffs > 0 then
    entry = M.open_diff(tool_call.title or 'edit', diffs, options, decide, tool_call._meta, true)
  else
    entry = { title = tool_call.title, options = options }
    entry.decide = function(choice)
      for i, r in ipairs(M.pending) do
        if r == entry then
          table.remove(M.pending, i)
        end
      end
      decide(choice)
    end
    table.insert(M.pending, entry)
    select(tool_call, options, entry.decide)
  end
  entry.request_id = type(params._meta) == 'table' and params._meta.requestId or nil
  entry.session_id = params.sessionId
  local choice, kept = coroutine.yield()
  require('kiln.chat').on_permission_answered(params, choice)
  flush_changes(ctx)
  local result = answer(choice)
  if kept then
    result._meta = { newText = kept }
  end
  return result
end

--- The server stopped waiting ($/cancelRequest {id}): withdraw the review of that request.
--- The handler never sees a request's JSON-RPC id; the server repeats it in `_meta.requestId`.
function M.on_server_cancel(params)
  local id = type(params) == 'table' and params.id or nil
  for _, review in ipairs(M.pending) do
    if id ~= nil and review.request_id == id then
      return review.decide(nil)
    end
  end
end

--- Withdraw the open reviews of `session_id` (every review when nil): the turn was cancelled
--- from our side, or the server went away.
function M.withdraw_all(session_id)
  for i = #M.pending, 1, -1 do
    local review = M.pending[i]
    local ours = session_id == nil or review.session_id == nil or review.session_id == session_id
    if ours then
      review.decide(nil)
    end
  end
end

return M
