-- Copy / Insert / Apply for the fenced code block under the cursor in the transcript:
-- `gy` copies it (unnamed and + registers), `gi` inserts it below the cursor of the file window
-- you came from, `ga` replaces a file with it after you confirm — the file named after the
-- language (```python calc.py) or else that same file window's buffer.
local M = {}

--- An opening fence: its character, length and info string (``` or ~~~, as CommonMark has
--- them; any indentation, since a fence in a list item is indented).
local function opening(line)
  local fence, info = line:match('^%s*(```+)(.*)$')
  if not fence then
    fence, info = line:match('^%s*(~~~+)(.*)$')
  end
  if not fence or (fence:sub(1, 1) == '`' and info:find('`', 1, true)) then
    return nil
  end
  return { char = fence:sub(1, 1), len = #fence, info = vim.trim(info) }
end

--- Whether `line` closes `fence`: the same character, at least as many, nothing after.
local function closing(line, fence)
  local run = line:match('^%s*([`~]+)%s*$')
  return run ~= nil
    and run:sub(1, 1) == fence.char
    and run:match('^' .. vim.pesc(fence.char) .. '+$') ~= nil
    and #run >= fence.len
end

--- The fenced block around `row` (1-based) of `lines`: { code, lang, target } or nil. A fence
--- closes only on the same character at least as long, so a ```` block quoting ``` keeps it.
function M.at(lines, row)
  local open, fence
  for i = 1, #lines do
    if not fence then
      fence = opening(lines[i])
      open = i
    elseif closing(lines[i], fence) then
      if row >= open and row <= i then
        local lang, rest = fence.info:match('^(%S*)%s*(.*)$')
        local target = ''
        if lang and lang:find(':', 1, true) then
          lang, target = lang:match('^([^:]*):(.*)$')
        elseif rest and rest ~= '' then
          target = rest:match('(%S*[./]%S*)') or ''
        end
        return {
          code = table.concat(vim.list_slice(lines, open + 1, i - 1), '\n') .. '\n',
          lang = lang or '',
          target = target,
        }
      end
      fence = nil
    end
  end
end

local function block()
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  local found = M.at(lines, vim.api.nvim_win_get_cursor(0)[1])
  if not found then
    vim.notify('kiln: put the cursor in a code block of the answer', vim.log.levels.WARN)
  end
  return found
end

--- The last window that showed a file (not a Kiln buffer), if it is still there.
local function file_window()
  local win = vim.fn.win_getid(vim.fn.winnr('#'))
  local function is_file(w)
    local b = vim.api.nvim_win_get_buf(w)
    return vim.bo[b].buftype == '' and vim.api.nvim_buf_get_name(b) ~= ''
  end
  if win ~= 0 and is_file(win) then
    return win
  end
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if is_file(w) then
      return w
    end
  end
end

function M.copy()
  local b = block()
  if b then
    vim.fn.setreg('"', b.code)
    local ok, exe = pcall(vim.fn['provider#clipboard#Executable'])
    if ok and exe ~= '' then -- a system clipboard is there (else '+' only prints an error)
      vim.fn.setreg('+', b.code)
    end
    vim.notify(string.format('kiln: copied %d lines', select(2, b.code:gsub('\n', ''))))
  end
end

function M.insert()
  local b = block()
  local win = b and file_window()
  if not b then
    return
  end
  if not win then
    return vim.notify('kiln: no file window to insert into', vim.log.levels.WARN)
  end
  local row = vim.api.nvim_win_get_cursor(win)[1]
  local code = vim.split(b.code, '\n', { plain = true })
  table.remove(code) -- the final newline
  vim.api.nvim_buf_set_lines(vim.api.nvim_win_get_buf(win), row, row, false, code)
end

--- Whether `path` is a readable file inside the workspace `root`, links followed
--- (`docs/passwd` through a link `docs -> /etc` is outside it).
local function in_workspace(root, path)
  local real, real_root = vim.uv.fs_realpath(path), vim.uv.fs_realpath(root) or root
  return vim.startswith(path, root .. '/')
    and real ~= nil
    and vim.startswith(real, real_root .. '/')
    and vim.fn.filereadable(path) == 1
end

function M.apply()
  local b = block()
  if not b then
    return
  end
  local root = require('kiln.client').current_root()
  local buf, path
  if b.target ~= '' then
    path = vim.fs.normalize(root .. '/' .. b.target)
    if not in_workspace(root, path) then
      return vim.notify('kiln: ' .. b.target .. ' is not a file in this workspace', vim.log.levels.WARN)
    end
    buf = vim.fn.bufadd(path)
    vim.fn.bufload(buf)
  else
    local win = file_window()
    if not win then
      return vim.notify('kiln: name the file after the language (```python calc.py)', vim.log.levels.WARN)
    end
    buf = vim.api.nvim_win_get_buf(win)
    -- The window you came from may show any file (/etc/hosts): only a workspace file is replaced.
    path = vim.fs.normalize(vim.api.nvim_buf_get_name(buf))
    if not in_workspace(root, path) then
      local shown = vim.fn.fnamemodify(path, ':~')
      return vim.notify('kiln: ' .. shown .. ' is not a file in this workspace', vim.log.levels.WARN)
    end
  end
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':.')
  local yes = vim.fn.confirm('Replace all of ' .. name .. ' with this code block?', '&Yes\n&No', 2)
  vim.cmd('redraw') -- clear the question, so the next message needs no Press-ENTER
  if yes ~= 1 then
    return
  end
  local was_modified = vim.bo[buf].modified
  local code = vim.split(b.code, '\n', { plain = true })
  table.remove(code)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, code)
  if not was_modified then
    vim.api.nvim_buf_call(buf, function()
      vim.cmd('silent noautocmd keepalt write')
    end)
  end
  vim.notify('kiln: applied to ' .. name)
end

function M.map(buf)
  local function map(lhs, fn, desc)
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, desc = 'Kiln: ' .. desc })
  end
  map('gy', M.copy, 'copy the code block')
  map('gi', M.insert, 'insert the code block into the file window')
  map('ga', M.apply, 'apply the code block to its file')
end

return M
