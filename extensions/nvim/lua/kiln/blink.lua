-- A blink.cmp source for the chat prompt's `@` mentions and `/` commands. Enable it in
-- blink's setup: sources = { per_filetype = { ['kiln-prompt'] = { 'kiln' } },
-- providers = { kiln = { name = 'Kiln', module = 'kiln.blink' } } }.
local complete = require('kiln.complete')

local Source = {}

function Source.new()
  return setmetatable({}, { __index = Source })
end

function Source:enabled()
  return vim.bo.filetype == 'kiln-prompt'
end

function Source:get_trigger_characters()
  return { '@', '/' }
end

function Source:get_completions(ctx, callback)
  local line = ctx.line:sub(1, ctx.cursor[2])
  local at = complete.trigger(line, ctx.cursor[1] == 1)
  if not at then
    return callback({ items = {}, is_incomplete_forward = true, is_incomplete_backward = true })
  end
  complete.fetch(line:sub(at), function(found)
    local items = {}
    for _, it in ipairs(found) do
      table.insert(items, {
        label = it.word,
        filterText = it.word,
        insertText = it.word,
        detail = it.menu,
        kind = 1,
        textEdit = {
          newText = it.word,
          range = {
            start = { line = ctx.cursor[1] - 1, character = at - 1 },
            ['end'] = { line = ctx.cursor[1] - 1, character = ctx.cursor[2] },
          },
        },
        data = it.user_data,
      })
    end
    callback({ items = items, is_incomplete_forward = true, is_incomplete_backward = true })
  end)
end

function Source:execute(ctx, item, callback, default)
  if item.data and item.data.kiln then
    require('kiln.input').add_context(complete.block(item.data.kiln), item.label)
  end
  if default then
    default()
  end
  if callback then
    callback()
  end
end

return Source
