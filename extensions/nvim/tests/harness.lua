-- The small test harness the plugin's Lua suite shares: named tests that report TAP-like
-- lines, equality with a readable diff, waiting on the event loop, and vim.notify captured.
local H = {}

local TIMEOUT = 20000

vim.o.showmode = false -- no "-- INSERT --" in the report
H.results = { passed = 0, failed = 0 }
H.notes = {}
vim.notify = function(msg, level)
  table.insert(H.notes, { msg = msg, level = level })
end

-- Globals the plugin's own files create (a forgotten `local`), checked by a test at the end.
H.leaked_globals = {}
setmetatable(_G, {
  __newindex = function(t, key, value)
    local info = debug.getinfo(2, 'S')
    if info and info.source:find('/lua/kiln/', 1, true) then
      table.insert(H.leaked_globals, string.format('%s (%s)', key, info.short_src))
    end
    rawset(t, key, value)
  end,
})

function H.test(name, fn)
  local started = vim.uv.hrtime()
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    H.results.passed = H.results.passed + 1
    local ms = (vim.uv.hrtime() - started) / 1e6
    io.stdout:write(string.format('ok - %s (%d ms)\n', name, ms))
  else
    H.results.failed = H.results.failed + 1
    io.stdout:write('not ok - ' .. name .. '\n  ' .. tostring(err):gsub('\n', '\n  ') .. '\n')
  end
end

function H.eq(expected, actual, what)
  if not vim.deep_equal(expected, actual) then
    error(
      string.format(
        '%s: expected %s, got %s',
        what or 'value',
        vim.inspect(expected),
        vim.inspect(actual)
      ),
      2
    )
  end
end

function H.wait_for(what, cond, timeout)
  if not vim.wait(timeout or TIMEOUT, cond, 20) then
    error('timed out waiting for ' .. what, 2)
  end
end

function H.contains(lines, needle)
  for _, l in ipairs(lines) do
    if l:find(needle, 1, true) then
      return true
    end
  end
  return false
end

function H.write(path, text)
  local f = assert(io.open(path, 'w'))
  f:write(text)
  f:close()
end

--- Print the summary and exit non-zero if anything failed.
function H.finish()
  local r = H.results
  io.stdout:write(string.format('# %d passed, %d failed\n', r.passed, r.failed))
  os.exit(r.failed == 0 and 0 or 1)
end

return H
