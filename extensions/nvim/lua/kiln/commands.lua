-- Slash commands typed in the chat prompt: the built-ins (/clear, /compact, /mode, /model,
-- /context) run here; any other name is an installed skill, whose instructions are loaded
-- with kiln/skills/use and sent ahead of the rest of the line (`/pdf fill the form`).
local client = require('kiln.client')
local config = require('kiln.config')
local transcript = require('kiln.transcript')

local M = {}

local EDIT_MODES = { deferred = true, auto = true }

local function say(lines)
  transcript.append(vim.list_extend(vim.deepcopy(lines), { '' }))
end

--- The model for the next session; the current session is closed (a session keeps its model).
function M.set_model(name)
  local session = vim.deepcopy(config.options.session or {})
  session.model = name ~= '' and name or nil
  config.options.session = session
  local chat = require('kiln.chat')
  if chat.state.busy then
    chat.state.model_pending = true -- the answer streaming stays; the next question starts anew
  else
    chat.reset()
  end
  say({ '[kiln] model ' .. (session.model or '(default)') .. ': the next question starts a new session' })
end

local function context()
  local chat = require('kiln.chat')
  local sid = chat.state.session_id
  if not sid then
    return say({ '[kiln] no session yet: nothing in the context' })
  end
  client.request('kiln/context/show', { sessionId = sid }, function(err, res)
    if err then
      return say({ '[error] ' .. client.describe(err) })
    end
    local lines = {
      string.format(
        '[kiln] context: %d messages, %d turns, %d steps; window %s tokens',
        res.messages or 0,
        res.turns or 0,
        res.steps or 0,
        tostring(res.contextWindow or '?')
      ),
    }
    local budget = res.budget
    if type(budget) == 'table' and type(budget.components) == 'table' then
      for _, c in ipairs(budget.components) do
        if type(c) == 'table' then
          table.insert(lines, string.format('  %-24s %s', tostring(c.name), tostring(c.tokens)))
        end
      end
    end
    if res.filesModified and #res.filesModified > 0 then
      table.insert(lines, '  files modified: ' .. table.concat(res.filesModified, ', '))
    end
    say(lines)
  end, chat.state.client_id and vim.lsp.get_client_by_id(chat.state.client_id) or nil)
end

--- /compact holds the session as a turn does (PROTOCOL.md): the chat is busy meanwhile, so a
--- question waits for it and :KilnStop (kiln/session/cancel) stops it, nothing compacted.
local function compact()
  local chat = require('kiln.chat')
  local S = chat.state
  local sid = S.session_id
  if not sid then
    return say({ '[kiln] no session yet: nothing to compact' })
  end
  if S.busy then
    vim.notify('kiln: a turn is running; :KilnStop it first', vim.log.levels.WARN)
    return false
  end
  S.busy, S.stop_early = true, false
  say({ '[kiln] compacting… (:KilnStop stops it)' })
  chat.refresh_title()
  client.request('kiln/session/compact', { sessionId = sid }, function(err, res)
    S.busy = false
    chat.refresh_title()
    if err then
      return say({ '[error] ' .. client.describe(err) })
    end
    if res.compacted then
      say({ string.format('[kiln] compacted: %s → %s tokens', res.beforeTokens, res.afterTokens) })
    elseif S.stop_early then
      say({ '[kiln] compaction stopped: the conversation is as it was' })
    else
      say({ '[kiln] nothing to compact yet' })
    end
    S.stop_early = false
  end, S.client_id and vim.lsp.get_client_by_id(S.client_id) or nil) -- its server
  return true
end

local MODES = {
  { mode = 'ask', about = 'reads free; edits and commands ask' },
  { mode = 'auto-edit', about = 'edits free; commands ask' },
  { mode = 'ci', about = 'no questions; risky commands denied' },
  { mode = 'yolo', about = 'everything allowed' },
  { editMode = 'ask', about = 'approve each edit' },
  { editMode = 'deferred', about = 'collect edits, review with :KilnEdits' },
  { editMode = 'auto', about = 'apply edits at once' },
}

--- gm in the chat: pick the permission mode or the edit mode.
function M.pick_mode()
  vim.ui.select(MODES, {
    prompt = 'Kiln mode',
    kind = 'kiln.mode',
    format_item = function(m)
      return (m.mode and ('mode ' .. m.mode) or ('edits ' .. m.editMode)) .. ' — ' .. m.about
    end,
  }, function(choice)
    vim.cmd('redraw') -- clear the list, so the confirmation needs no Press-ENTER
    if choice then
      require('kiln.chat').set_mode({ mode = choice.mode, editMode = choice.editMode })
    end
  end)
end

--- gM in the chat: the model for the next session, from the server's list (kiln.models).
function M.pick_model()
  require('kiln.models').pick((config.options.session or {}).model or '', M.set_model)
end

--- Run `/name args`; returns false when the line was not accepted (the prompt keeps it).
function M.run(text, blocks, labels)
  local name, args = text:match('^/([%w%._%-]+)%s*(.*)$')
  local chat = require('kiln.chat')
  if not name then
    say({ '[kiln] not a command: ' .. text })
    return false
  end
  args = vim.trim(args or '')
  if name == 'clear' then
    chat.reset()
  elseif name == 'compact' then
    return compact() ~= false
  elseif name == 'context' then
    context()
  elseif name == 'mode' then
    if args == '' then
      M.pick_mode()
    elseif EDIT_MODES[args] then
      chat.set_mode({ editMode = args })
    else
      chat.set_mode({ mode = args })
    end
  elseif name == 'model' then
    M.set_model(args)
  else
    client.request('kiln/skills/use', { name = name }, function(err, res)
      if err then
        return say({ '[error] ' .. client.describe(err) })
      end
      local all = { res.block }
      vim.list_extend(all, blocks or {})
      local shown = { 'skill ' .. res.name }
      vim.list_extend(shown, labels or {})
      local question = args ~= '' and args or ('Use the ' .. res.name .. ' skill.')
      chat.send(question, all, nil, shown)
    end)
  end
  return true
end

return M
