-- :KilnRestart — stop the server of the chat's workspace and start it again; the chat's
-- session goes on in the new server (kiln/session/load, no replay: the transcript is shown).
local client = require('kiln.client')

local M = {}

--- `cb(err)` runs once the new server holds the session (or failed to).
function M.restart(cb)
  cb = cb or function() end
  local chat = require('kiln.chat')
  local S = chat.state
  if S.busy then
    vim.notify('kiln: a turn is running; :KilnStop it first', vim.log.levels.WARN)
    return cb({ message = 'a turn is running' })
  end
  local old = S.client_id and vim.lsp.get_client_by_id(S.client_id)
  local root = old and old.root_dir or client.current_root()
  old = old or client.running(root)
  local sid = S.session_id
  local function started()
    local c, why = client.start(nil, root)
    if not c then
      return cb({ message = why })
    end
    S.restarting = nil
    if not sid then
      vim.notify('kiln: the server restarted')
      return cb(nil)
    end
    S.session_id, S.client_id = sid, c.id
    client.request('kiln/session/load', { sessionId = sid, replay = false }, function(err)
      if err then
        S.session_id = nil
        client.report(err, vim.log.levels.ERROR)
      else
        require('kiln.transcript').append({ '[kiln] the server restarted; the session goes on', '' })
      end
      chat.refresh_title()
      cb(err)
    end, c)
  end
  if not old or old:is_stopped() then
    return started()
  end
  S.restarting = old.id -- its exit is ours: chat.on_exit keeps the session
  old:stop()
  local tries = 0
  local timer = assert(vim.uv.new_timer())
  timer:start(50, 50, vim.schedule_wrap(function()
    tries = tries + 1
    if old:is_stopped() or tries > 200 then -- ten seconds at most, then force it
      if not old:is_stopped() then
        old:stop(true)
      end
      timer:stop()
      timer:close()
      started()
    end
  end))
end

return M
