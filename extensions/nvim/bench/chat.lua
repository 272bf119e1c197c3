-- Speed figures for the chat, printed, never asserted:
--  1. transcript rendering: streaming an answer in small chunks plus tool lines that are
--     rewritten three times each, against writing the same final lines in one call;
--  2. a prompt's round trip through the plugin and `kiln lsp` (scripted model), against a bare
--     `kiln/hello` request to the same server.
-- Run: KILN_PYTHON=$(which python) nvim --headless --clean -l extensions/nvim/bench/chat.lua
local here = vim.fs.dirname(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p'))
vim.opt.rtp:prepend(vim.fs.dirname(here))
vim.notify = function() end

local function ms(t0)
  return (vim.uv.hrtime() - t0) / 1e6
end

local function median(xs)
  table.sort(xs)
  return xs[math.floor((#xs + 1) / 2)]
end

-- 1. Rendering
local transcript = require('kiln.transcript')
local CHUNKS, TOOLS = 5000, 300
local t0 = vim.uv.hrtime()
for i = 1, CHUNKS do
  transcript.stream(i % 12 == 0 and 'word\n' or 'word ')
end
for i = 1, TOOLS do
  local id = 'tool-' .. i
  transcript.tool(id, { title = 'read_file: src/module_' .. i .. '.py', status = 'in_progress' })
  transcript.tool(id, { status = 'pending', note = 'waiting for your answer' })
  transcript.tool(id, { status = 'completed', note = 'allowed' })
end
local render_ms = ms(t0)
local final = transcript.lines()
local baseline_buf = vim.api.nvim_create_buf(false, true)
t0 = vim.uv.hrtime()
vim.api.nvim_buf_set_lines(baseline_buf, 0, -1, false, final)
local oneshot_ms = math.max(ms(t0), 0.001)
print(
  string.format(
    'render: %d chunks + %d tool lines x3 in %.1f ms (%.1f us per update); one-shot write of the %d lines %.2f ms; ratio %.0fx',
    CHUNKS,
    TOOLS,
    render_ms,
    render_ms * 1000 / (CHUNKS + 3 * TOOLS),
    #final,
    oneshot_ms,
    render_ms / oneshot_ms
  )
)
transcript.clear()

-- 2. Round trip
local TURNS = 20
local ws = vim.fs.normalize(vim.fn.tempname() .. '-ws')
vim.fn.mkdir(ws .. '/.git', 'p')
vim.fn.writefile({ 'x = 1' }, ws .. '/a.py')
vim.fn.chdir(ws)
local script = {}
for i = 1, TURNS + 1 do
  script[i] = 'answer number ' .. i .. ' with a few words of text'
end
local script_path = vim.fn.tempname() .. '-script.json'
vim.fn.writefile({ vim.json.encode(script) }, script_path)
vim.env.KILN_HOME = vim.env.KILN_HOME or (vim.fn.tempname() .. '-home')
vim.env.KILN_PROVIDER, vim.env.KILN_SCRIPT = 'scripted', script_path
vim.cmd.edit(ws .. '/a.py')
local python = vim.env.KILN_PYTHON or 'python3'
t0 = vim.uv.hrtime()
require('kiln').setup({
  cmd = { python, '-m', 'lsp_server', 'lsp' },
  init_options = { index = false },
})
local client
assert(vim.wait(30000, function()
  client = vim.lsp.get_clients({ name = 'kiln' })[1]
  return client ~= nil and client.initialized == true
end, 5))
local start_ms = ms(t0)

local chat = require('kiln.chat')
local function one_turn()
  chat.last_result = nil
  local t = vim.uv.hrtime()
  chat.send('go')
  assert(vim.wait(30000, function()
    return chat.last_result ~= nil
  end, 1))
  assert(chat.last_result.stopReason == 'end_turn', vim.inspect(chat.last_result))
  return ms(t)
end
one_turn() -- creates the session; not counted
local turns = {}
for i = 1, TURNS do
  turns[i] = one_turn()
end
local hellos = {}
for i = 1, TURNS do
  local done = false
  local t = vim.uv.hrtime()
  client:request('kiln/hello', vim.empty_dict(), function()
    done = true
  end)
  assert(vim.wait(10000, function()
    return done
  end, 1))
  hellos[i] = ms(t)
end
local turn_ms, hello_ms = median(turns), median(hellos)
print(string.format('server start to initialized: %.0f ms', start_ms))
print(
  string.format(
    'prompt round trip (median of %d): %.1f ms; kiln/hello round trip %.1f ms; ratio %.1fx',
    TURNS,
    turn_ms,
    hello_ms,
    turn_ms / hello_ms
  )
)
require('kiln.client').stop()
vim.wait(3000, function()
  return #vim.lsp.get_clients({ name = 'kiln' }) == 0
end)
os.exit(0)
