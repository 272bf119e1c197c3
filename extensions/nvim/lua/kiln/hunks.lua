-- Per-hunk review of a whole-file edit: the hunks (vim.diff indices), the review lines with a
-- tick per hunk, and the text that results from keeping only the ticked hunks. An accept with
-- some hunks unticked sends that text as `_meta.newText` (lsp_server/PROTOCOL.md).
local M = {}

local function lines_of(text)
  local lines = vim.split(text or '', '\n', { plain = true })
  if lines[#lines] == '' then
    table.remove(lines)
  end
  return lines
end

--- Hunks of old -> new: { old_first, old_count, new_first, new_count } (1-based).
function M.hunks(old, new)
  local a = (old ~= '' and old:sub(-1) ~= '\n') and (old .. '\n') or old
  local b = (new ~= '' and new:sub(-1) ~= '\n') and (new .. '\n') or new
  local out = {}
  for _, h in ipairs(vim.diff(a, b, { result_type = 'indices' }) --[[@as table]]) do
    local sa, ca, sb, cb = h[1], h[2], h[3], h[4]
    table.insert(out, { ca == 0 and sa + 1 or sa, ca, cb == 0 and sb + 1 or sb, cb })
  end
  return out
end

--- Review lines for one diff; `ticks[i]` says whether hunk i is kept. Returns the lines and,
--- per hunk, the index (1-based, within these lines) of its header.
function M.render(old, new, ticks, context)
  context = context or 2
  local a, b = lines_of(old), lines_of(new)
  local lines, headers = {}, {}
  for i, h in ipairs(M.hunks(old, new)) do
    local of, oc, nf, nc = h[1], h[2], h[3], h[4]
    table.insert(lines, M.header(i, h, ticks[i] ~= false))
    headers[i] = #lines
    for k = math.max(1, of - context), of - 1 do
      table.insert(lines, ' ' .. a[k])
    end
    for k = of, of + oc - 1 do
      table.insert(lines, '-' .. a[k])
    end
    for k = nf, nf + nc - 1 do
      table.insert(lines, '+' .. b[k])
    end
    for k = of + oc, math.min(#a, of + oc + context - 1) do
      table.insert(lines, ' ' .. a[k])
    end
  end
  return lines, headers
end

function M.header(i, h, kept)
  local last = h[1] + math.max(h[2], 1) - 1
  return string.format('@@ [%s] hunk %d: lines %d-%d @@', kept and 'x' or ' ', i, h[1], last)
end

--- The old text with only the ticked hunks applied.
function M.keep(old, new, ticks)
  local a, b = lines_of(old), lines_of(new)
  local out, at = {}, 1
  for i, h in ipairs(M.hunks(old, new)) do
    local of, oc, nf, nc = h[1], h[2], h[3], h[4]
    for k = at, of - 1 do
      table.insert(out, a[k])
    end
    if ticks[i] ~= false then
      for k = nf, nf + nc - 1 do
        table.insert(out, b[k])
      end
    else
      for k = of, of + oc - 1 do
        table.insert(out, a[k])
      end
    end
    at = of + oc
  end
  for k = at, #a do
    table.insert(out, a[k])
  end
  local text = table.concat(out, '\n')
  if #out > 0 and (new:sub(-1) == '\n' or new == '') then
    text = text .. '\n'
  end
  return text
end

return M
