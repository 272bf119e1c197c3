-- The model picker (gM in the chat, :KilnModel without a name): the models the server's
-- kiln/models/list offers (the configured one first, then the provider's known models or an
-- OpenAI-compatible server's own list), plus "other…" to type any id and "the default".
-- A server that cannot list them leaves the picker a free-text prompt, as before.
local M = {}

local function ask_name(current, done)
  vim.ui.input({ prompt = 'Kiln model (empty: the default): ', default = current }, function(name)
    if name ~= nil then
      done(vim.trim(name))
    end
  end)
end

--- Pick a model id; `done(id)` gets '' for "the server's default". `current` is the
--- panel's choice so far (marked in the list).
function M.pick(current, done)
  require('kiln.client').request('kiln/models/list', vim.empty_dict(), function(err, listed)
    local models = (not err and type(listed) == 'table' and listed.models) or {}
    if #models == 0 then
      return ask_name(current, done)
    end
    local items = {}
    for _, m in ipairs(models) do
      table.insert(items, { id = m.id, about = m.source })
    end
    table.insert(items, { other = true, about = 'type another model id' })
    table.insert(items, { id = '', about = "the server's default" })
    local prompt = 'Kiln model (' .. tostring(listed.provider) .. ')'
    if type(listed.note) == 'string' then
      prompt = prompt .. ' — ' .. listed.note
    end
    vim.ui.select(items, {
      prompt = prompt,
      kind = 'kiln.model',
      format_item = function(item)
        local name = item.other and 'other…' or (item.id == '' and '(default)' or item.id)
        local mark = (item.id and item.id ~= '' and item.id == current) and ' (current)' or ''
        return name .. mark .. ' — ' .. item.about
      end,
    }, function(choice)
      vim.cmd('redraw') -- clear the list, so what follows needs no Press-ENTER
      if not choice then
        return
      elseif choice.other then
        ask_name(current, done)
      else
        done(choice.id)
      end
    end)
  end)
end

return M
