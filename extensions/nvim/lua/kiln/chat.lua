-- The chat: the session, sending a prompt and stopping a turn, resuming a stored session; its
-- windows are kiln.chat_window. One session per editor; :KilnChat reopens the same one.
local client = require('kiln.client')
local config = require('kiln.config')
local transcript = require('kiln.transcript')
local window = require('kiln.chat_window')

local M = {}

---@class kiln.ChatState
local S = {
  buf = nil, -- transcript buffer (owned by kiln.transcript)
  input = nil, -- prompt buffer
  win = nil,
  input_win = nil,
  session_id = nil,
  client_id = nil, -- the server that holds the session
  edit_mode = nil,
  busy = false,
  usage = nil,
  model_pending = false, -- :KilnModel during a turn: the next question starts a new session
}
M.state = S

--- What `:KilnMode` and `:KilnEditMode` accept (PROTOCOL.md §1).
M.MODES = { 'ask', 'auto-edit', 'ci', 'yolo' }
M.EDIT_MODES = { 'ask', 'deferred', 'auto' }

--- The last kiln/session/prompt result (or error), for callers and tests.
M.last_result = nil

local valid_buf = window.valid_buf

-- What the windows call back into: the prompt's submit, stop and close.
local handlers = {
  submit = function(...)
    return M.submit(...)
  end,
  stop = function()
    return M.stop()
  end,
  close = function()
    return M.close()
  end,
}

local function ensure_buffers()
  window.ensure_buffers(S, handlers)
end

--- The client that holds the session (sessions live in one server), else the current one.
local function bound()
  local c = S.client_id and vim.lsp.get_client_by_id(S.client_id)
  if c and not c:is_stopped() then
    return c
  end
  return client.get()
end

--- Handler for kiln/session/update notifications.
function M.on_update(params)
  if S.session_id and params.sessionId ~= S.session_id then
    return
  end
  local u = params.update or {}
  if u.sessionUpdate == 'usage_update' then
    S.usage = u
    M.refresh_title()
  else
    transcript.render(u, S.edit_mode)
  end
end

function M.on_permission(params)
  local tc = params.toolCall or {}
  if transcript.has_tool(tc.toolCallId) then
    transcript.tool(tc.toolCallId, { status = 'pending', note = 'waiting for your answer' })
  else
    transcript.append({ transcript.one_line('  ? ' .. (tc.title or 'permission requested')) })
  end
end

function M.on_permission_answered(params, choice)
  local tc = params.toolCall or {}
  if transcript.has_tool(tc.toolCallId) then
    local note = choice and choice:match('^allow') and 'allowed' or 'rejected'
    transcript.tool(tc.toolCallId, { status = 'in_progress', note = note })
  end
end

function M.refresh_title()
  window.refresh_title(S)
end

--- Open (or focus) the chat. `layout`: 'vsplit', 'split' or 'float' (default from setup).
function M.open(layout)
  window.open(S, layout, handlers)
end

function M.close()
  window.close(S)
end

--- Create the session if there is none yet, then call `cb(err, session_id)`.
local function with_session(cb)
  if S.session_id then
    return cb(nil, S.session_id)
  end
  local c = bound()
  if not c then
    return cb({ message = 'the language server is not running' })
  end
  local params = vim.tbl_extend('force', config.options.session or {}, { cwd = c.root_dir })
  client.request('kiln/session/new', params, function(err, result)
    if err then
      return cb(err)
    end
    S.session_id, S.edit_mode, S.client_id = result.sessionId, result.editMode, c.id
    S.mode = result.mode
    cb(nil, S.session_id)
  end, c)
end

--- Send a prompt. `text` is shown in the transcript; `blocks` are extra prompt blocks
--- (e.g. a resource_link for a selection). `cb(err, result)` runs when the turn ends.
function M.send(text, blocks, cb, labels)
  if S.busy then
    vim.notify('kiln: a turn is running; :KilnStop to cancel it', vim.log.levels.WARN)
    return false
  end
  if S.model_pending and S.session_id then
    M.reset() -- :KilnModel during the last turn: a session keeps its model, so a new one
  end
  local c = client.get()
  if not c then
    return false
  end
  if S.session_id and S.client_id ~= c.id then
    -- The user moved to another workspace: its server holds no session of ours yet. The old
    -- one is freed in its server, as :KilnNew does (it stays stored; :KilnResume there).
    local old = vim.lsp.get_client_by_id(S.client_id)
    if old and not old:is_stopped() then
      old:request('kiln/session/close', { sessionId = S.session_id }, function() end)
    end
    transcript.append({ '[kiln] now in ' .. c.root_dir .. ': a new session', '' })
    S.session_id = nil
  end
  S.client_id = c.id
  ensure_buffers()
  local shown = { '## You' }
  vim.list_extend(shown, vim.split(text, '\n', { plain = true }))
  for i, b in ipairs(blocks or {}) do
    if labels and labels[i] then
      table.insert(shown, '  ' .. labels[i])
    elseif b.type == 'resource' and b.resource then
      table.insert(shown, '  @' .. tostring(b.resource.uri))
    elseif b.type == 'resource_link' then
      local r = b.range
      local where = r and string.format(':%d-%d', r.start.line + 1, r['end'].line + 1) or ''
      table.insert(shown, '  @' .. (b.name or b.uri) .. where)
    end
  end
  vim.list_extend(shown, { '', '## Kiln' })
  transcript.append(shown)
  S.busy, S.stop_early = true, false
  M.last_result = nil
  M.refresh_title()
  local prompt = { { type = 'text', text = text } }
  vim.list_extend(prompt, blocks or {})
  local function finish(err, res)
    S.busy = false
    M.last_result = err and { error = err } or res
    transcript.settle(err and 'error' or (res.stopReason ~= 'end_turn' and res.stopReason or nil))
    if err then
      transcript.append({ '[error] ' .. client.describe(err), '' })
    else
      local files = res.filesModified or {}
      local closing = '— ' .. tostring(res.stopReason)
      if #files > 0 then
        closing = closing .. ' · modified: ' .. table.concat(files, ', ')
      end
      transcript.append({ closing, '' })
    end
    M.refresh_title()
    if cb then
      cb(err, res)
    end
  end
  with_session(function(serr, sid)
    if serr or S.stop_early then -- stopped while its session was being made: not asked
      return finish(serr, { stopReason = 'cancelled' })
    end
    client.request('kiln/session/prompt', { sessionId = sid, prompt = prompt }, finish, bound())
  end)
  return true
end

--- Cancel the running turn (kiln/session/cancel); the prompt then ends with "cancelled".
function M.stop()
  if S.busy and not S.session_id then -- kiln/session/new is not answered yet
    S.stop_early = true
    return true
  end
  if not (S.session_id and S.busy) then
    vim.notify('kiln: no turn is running', vim.log.levels.INFO)
    return false
  end
  S.stop_early = true -- also tells a /compact it was stopped (its answer is compacted = false)
  client.notify('kiln/session/cancel', { sessionId = S.session_id }, bound())
  require('kiln.review').withdraw_all(S.session_id)
  return true
end

--- Change the session's permission mode and/or edit mode (`{ mode = ..., editMode = ... }`);
--- without a session yet, the values apply to the next one.
function M.set_mode(modes, cb)
  local function done(err, result)
    if err then
      client.report(err, vim.log.levels.ERROR)
    else
      S.edit_mode = result.editMode or S.edit_mode
      S.mode = result.mode or S.mode
      M.refresh_title()
      vim.notify(string.format('kiln: mode %s, edit mode %s', result.mode, result.editMode))
    end
    if cb then
      cb(err, result)
    end
  end
  if not S.session_id then
    -- Kept for the next session: a typo would make its kiln/session/new (every question) fail.
    local bad = modes.mode and not vim.tbl_contains(M.MODES, modes.mode) and 'mode'
      or modes.editMode and not vim.tbl_contains(M.EDIT_MODES, modes.editMode) and 'editMode'
    if bad then
      local known = bad == 'mode' and M.MODES or M.EDIT_MODES
      local why = string.format('unknown %s %q', bad, modes[bad])
      local err = { message = why .. ' (one of ' .. table.concat(known, ', ') .. ')' }
      client.report(err, vim.log.levels.ERROR)
      return cb and cb(err) or false
    end
    local session = vim.tbl_extend('force', config.options.session or {}, modes)
    config.options.session = session
    return done(
      nil,
      { mode = session.mode or '(default)', editMode = session.editMode or '(default)' }
    )
  end
  local params = vim.tbl_extend('force', modes, { sessionId = S.session_id })
  client.request('kiln/session/setMode', params, done, bound())
end

--- The server went away: a running turn will never answer, so end it here. The session is
--- stored by the server; the next prompt starts a new one.
function M.on_exit(code, signal, client_id)
  if S.client_id and client_id and client_id ~= S.client_id then
    return -- another workspace's server; our session is elsewhere
  end
  if S.restarting and S.restarting == client_id then
    return -- :KilnRestart: the session goes on in the new server
  end
  require('kiln.review').withdraw_all()
  local was_busy, had_session = S.busy, S.session_id ~= nil
  S.busy, S.session_id = false, nil
  -- A server killed by a signal (SIGKILL: the OOM killer) exits with code 0; SIGTERM is a stop
  if code ~= 0 or (signal ~= 0 and signal ~= 15) or was_busy then
    local msg =
      string.format('kiln: the server exited (code %s, signal %s); see :LspLog', code, signal)
    if valid_buf(S.buf) then
      transcript.settle('the server exited')
      transcript.append({ '[error] ' .. msg })
    end
    if was_busy then
      M.last_result = { error = { message = msg } }
    end
    -- Neovim itself reports a server that failed or was killed (other than by SIGTERM); a
    -- second message would stop the editor on a hit-enter prompt.
    if code == 0 and (signal == 0 or signal == 15) then
      vim.notify(msg, vim.log.levels.WARN)
    end
  elseif had_session and valid_buf(S.buf) then -- stopped (:LspRestart): the session is stored
    transcript.append({ '[kiln] the server stopped: the next question starts a new session (:KilnResume continues this one)', '' })
  end
  M.refresh_title()
end

--- Start a fresh session the next time a prompt is sent, with an empty transcript. Refused
--- (false) while a turn runs: its answer would stream into the new session's transcript.
function M.reset()
  if S.busy then
    vim.notify('kiln: a turn is running; :KilnStop it first', vim.log.levels.WARN)
    return false
  end
  -- Free the old session in its server (it stays stored; :KilnResume brings it back).
  local old = S.client_id and vim.lsp.get_client_by_id(S.client_id)
  if S.session_id and old and not old:is_stopped() then
    old:request('kiln/session/close', { sessionId = S.session_id }, function() end)
  end
  S.session_id, S.client_id, S.edit_mode, S.busy, S.usage = nil, nil, nil, false, nil
  S.mode, S.model_pending = nil, false
  transcript.clear()
  M.refresh_title()
  return true
end

--- Resume a stored session (also one from an earlier server): its history is replayed into
--- the transcript, then new prompts continue it. `cb(err, result)` is optional.
function M.resume(session_id, cb)
  if S.busy then
    vim.notify('kiln: a turn is running; :KilnStop first', vim.log.levels.WARN)
    return false
  end
  local c = client.get()
  if not c then
    return false
  end
  if session_id == S.session_id then
    transcript.clear() -- the same live session: replay it without closing it first
  else
    M.reset()
  end
  S.session_id, S.client_id = session_id, c.id -- set first: the replay carries this id
  S.model_pending = false -- a resumed session keeps its own model
  local params = { sessionId = session_id, replay = true }
  client.request('kiln/session/load', params, function(err, res)
    if err then
      S.session_id = nil
      client.report(err, vim.log.levels.ERROR)
    else
      S.edit_mode = res.editMode or S.edit_mode
      transcript.append({ string.format('— resumed session %s', session_id), '' })
    end
    if cb then
      cb(err, res)
    end
  end, c)
  return true
end

--- The picker's last row while older sessions follow (the server lists 50 a page).
local OLDER = { sessionId = '', older = true }

--- :KilnResume — pick one of the workspace's stored sessions with vim.ui.select. The server
--- answers in pages of 50, newest first: while more follow, the last row is "Load older
--- sessions…", which reads the next page and asks again with it added.
function M.pick_session(cb)
  local listed = {}
  local function page(cursor)
    local params = cursor and { cursor = cursor } or vim.empty_dict()
    client.request('kiln/session/list', params, function(err, res)
      if err then
        client.report(err, vim.log.levels.ERROR)
        return cb and cb(err)
      end
      vim.list_extend(listed, res.sessions or {})
      if #listed == 0 then
        vim.notify('kiln: no stored sessions for this workspace')
        return cb and cb(nil)
      end
      local next_cursor = type(res.nextCursor) == 'string' and res.nextCursor or nil
      local items = vim.list_slice(listed)
      if next_cursor then
        items[#items + 1] = OLDER
      end
      vim.ui.select(items, {
        prompt = 'Resume a Kiln session',
        kind = 'kiln.session',
        format_item = function(item)
          if item.older then
            return 'Load older sessions…'
          end
          -- one row: the title is the first question's start, which may hold line breaks
          local title = item.title ~= '' and item.title or item.sessionId
          return transcript.one_line(string.format('%s  %s', item.updatedAt or '', title))
        end,
      }, function(item)
        if item and item.older then
          page(next_cursor)
        elseif item then
          M.open()
          M.resume(item.sessionId, cb)
        elseif cb then
          cb(nil)
        end
      end)
    end)
  end
  page(nil)
end

--- What the prompt sends: a `/command` is run (see kiln.commands), anything else is asked;
--- a line that starts with a path (`/etc/hosts: why…`) is a question, not a command.
function M.submit(text, blocks, labels)
  local name = text:match('^/([%w%._%-]+)')
  local after = name and text:sub(#name + 2, #name + 2) or nil
  if name and (after == '' or after:match('%s')) then
    return require('kiln.commands').run(text, blocks, labels)
  end
  return M.send(text, blocks, nil, labels)
end

--- The transcript as a list of lines.
function M.lines()
  return transcript.lines()
end

return M
