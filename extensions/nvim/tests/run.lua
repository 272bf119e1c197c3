-- End-to-end tests of the Kiln plugin: real headless Neovim against a real `kiln lsp`
-- (python -m lsp_server lsp) driven by the in-package scripted model.
-- Run: nvim --headless --clean -l extensions/nvim/tests/run.lua
-- Env: KILN_PYTHON (interpreter with Kiln installed, default python3); KILN_HOME is set to a
-- temp dir here unless given.
local here = vim.fs.dirname(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p'))
local plugin_root = vim.fs.dirname(here)
vim.opt.rtp:prepend(plugin_root)
vim.cmd('runtime plugin/kiln.lua')

local python = vim.env.KILN_PYTHON or 'python3'
local TIMEOUT = 20000

local results = { passed = 0, failed = 0 }
local notes = {}
vim.notify = function(msg, level)
  table.insert(notes, { msg = msg, level = level })
end

local function test(name, fn)
  local started = vim.uv.hrtime()
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    results.passed = results.passed + 1
    local ms = (vim.uv.hrtime() - started) / 1e6
    io.stdout:write(string.format('ok - %s (%d ms)\n', name, ms))
  else
    results.failed = results.failed + 1
    io.stdout:write('not ok - ' .. name .. '\n  ' .. tostring(err):gsub('\n', '\n  ') .. '\n')
  end
end

local function eq(expected, actual, what)
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

local function wait_for(what, cond, timeout)
  if not vim.wait(timeout or TIMEOUT, cond, 20) then
    error('timed out waiting for ' .. what, 2)
  end
end

local function contains(lines, needle)
  for _, l in ipairs(lines) do
    if l:find(needle, 1, true) then
      return true
    end
  end
  return false
end

local function write(path, text)
  local f = assert(io.open(path, 'w'))
  f:write(text)
  f:close()
end

-- A workspace, a temp KILN_HOME and the model's script, consumed in order by the tests below.
local ws = vim.fs.normalize(vim.fn.tempname() .. '-ws')
vim.fn.mkdir(ws .. '/.git', 'p')
write(ws .. '/notes.txt', 'first note\n')
write(ws .. '/app.py', 'def greet(name):\n    return "hello " + name\n\n\nSECRET = "marker-7731"\n')
vim.fn.chdir(ws)
vim.env.KILN_HOME = vim.env.KILN_HOME or (vim.fn.tempname() .. '-home')
local function edit(old, new, path)
  return { name = 'edit_file', input = { path = path or 'app.py', old_text = old, new_text = new } }
end
-- Each session's model gets its own copy of the script; `match` steps are taken only when the
-- latest user text contains the key, so the first session skips the step for the last test.
local script = {
  { match = 'timeout-please', text = 'Asking.', tool_calls = { edit('greet', 'salute') } },
  'Hello from Kiln, a streamed answer.',
  { match = 'marker-7731', text = 'I saw the selection.' },
  {
    text = 'Renaming the greeting.',
    tool_calls = {
      {
        name = 'todo_write',
        input = {
          items = { { id = '1', content = 'Shorten the greeting', status = 'in_progress' } },
        },
      },
      edit('"hello "', '"hi "'),
    },
  },
  'The edit is in.',
  { text = 'Another try.', tool_calls = { edit('"hi "', '"bye "') } },
  'Understood, leaving it.',
  {
    text = 'Running it.',
    tool_calls = { { name = 'run_command', input = { command = 'echo kiln-ran' } } },
  },
  'The command ran.',
  { text = 'Editing the notes.', tool_calls = { edit('first note', 'second note', 'notes.txt') } },
  'Notes updated.',
  { text = 'One more.', tool_calls = { edit('"hi "', '"yo "') } },
  'The buffer moved on.',
  { text = 'Proposing.', tool_calls = { edit('"hi "', '"hey "') } },
  'Proposed for later.',
  { text = 'Again.', tool_calls = { edit('"hey "', '"hallo "') } },
  { sleep = 60 },
  'never reached',
}
local script_path = vim.fn.tempname() .. '-script.json'
write(script_path, vim.json.encode(script))
vim.env.KILN_PROVIDER = 'scripted'
vim.env.KILN_SCRIPT = script_path

local kiln = require('kiln')
local chat = require('kiln.chat')
local review = require('kiln.review')

test('a missing kiln command gives one clear message and no client', function()
  require('kiln.config').set({ cmd = { 'kiln-not-installed-anywhere', 'lsp' } })
  local client, msg = require('kiln.client').start()
  eq(nil, client, 'client')
  assert(msg:find('kiln%-not%-installed%-anywhere') and msg:find('pip install kiln%-agent'), msg)
  eq(vim.log.levels.ERROR, notes[#notes].level, 'notify level')
  eq(0, #vim.lsp.get_clients({ name = 'kiln' }), 'clients')
end)

test('the help file has valid tags', function()
  local dir = vim.fn.tempname() .. '-doc'
  vim.fn.mkdir(dir, 'p')
  vim.fn.writefile(vim.fn.readfile(plugin_root .. '/doc/kiln.txt'), dir .. '/kiln.txt')
  vim.cmd.helptags(vim.fn.fnameescape(dir))
  local tags = table.concat(vim.fn.readfile(dir .. '/tags'), '\n')
  for _, tag in ipairs({
    'kiln',
    'kiln.setup()',
    ':KilnChat',
    ':KilnAsk',
    ':KilnStop',
    ':KilnSkills',
  }) do
    assert(
      tags:find('^' .. vim.pesc(tag) .. '\t') or tags:find('\n' .. vim.pesc(tag) .. '\t'),
      'missing tag ' .. tag
    )
  end
end)

vim.cmd.edit(vim.fn.fnameescape(ws .. '/app.py'))
local app = vim.api.nvim_get_current_buf()

test('setup starts kiln lsp for the workspace and attaches the buffer', function()
  kiln.setup({ cmd = { python, '-m', 'lsp_server', 'lsp' }, init_options = { index = false } })
  local client
  wait_for('the client to initialize', function()
    client = vim.lsp.get_clients({ name = 'kiln' })[1]
    return client ~= nil and client.initialized == true
  end)
  eq(ws, client.root_dir, 'root')
  assert(vim.lsp.buf_is_attached(app, client.id), 'app.py not attached')
end)

local function turn(text, blocks)
  chat.send(text, blocks)
  wait_for('the turn to end', function()
    return chat.last_result ~= nil
  end)
  return chat.last_result
end

test(':KilnChat opens the chat and a prompt streams the answer', function()
  vim.cmd('KilnChat')
  assert(vim.api.nvim_win_is_valid(chat.state.win), 'chat window')
  eq('prompt', vim.bo[vim.api.nvim_win_get_buf(chat.state.input_win)].buftype, 'input buffer')
  local result = turn('say hello')
  eq('end_turn', result.stopReason, 'stopReason')
  local lines = chat.lines()
  assert(contains(lines, 'Hello from Kiln, a streamed answer.'), vim.inspect(lines))
  assert(contains(lines, 'say hello'), 'the user line is shown')
end)

test(':KilnAsk sends the selected lines as a resource reference', function()
  vim.api.nvim_set_current_win(vim.fn.bufwinid(app))
  vim.cmd('5,5KilnAsk what is this constant?')
  wait_for('the turn to end', function()
    return chat.last_result ~= nil
  end)
  eq('end_turn', chat.last_result.stopReason, vim.inspect(chat.last_result))
  local lines = chat.lines()
  assert(contains(lines, '@app.py:5-5'), vim.inspect(lines))
  assert(contains(lines, 'I saw the selection.'), 'the model did not see the selection')
end)

test('an approved edit is reviewed as a diff and changes the buffer', function()
  chat.send('shorten the greeting')
  wait_for('the diff review', function()
    return review.pending[1] ~= nil
  end)
  local shown = vim.api.nvim_buf_get_lines(review.pending[1].buf, 0, -1, false)
  assert(contains(shown, '-    return "hello " + name'), vim.inspect(shown))
  assert(contains(shown, '+    return "hi " + name'), vim.inspect(shown))
  eq('diff', vim.bo[review.pending[1].buf].filetype, 'filetype')
  assert(review.resolve('accept'))
  wait_for('the turn to end', function()
    return chat.last_result ~= nil
  end)
  eq('end_turn', chat.last_result.stopReason, 'stopReason')
  eq('    return "hi " + name', vim.api.nvim_buf_get_lines(app, 1, 2, false)[1], 'buffer line')
  local lines = chat.lines()
  assert(contains(lines, 'Plan:') and contains(lines, 'Shorten the greeting'), 'plan shown')
  assert(contains(lines, '✓ edit_file: app.py'), vim.inspect(lines))
  local count = 0
  for _, l in ipairs(lines) do
    count = count + (l:find('todo_write', 1, true) and 1 or 0)
  end
  eq(1, count, 'one line per tool call')
  assert(contains(lines, 'The edit is in.'), 'answer after the edit')
end)

test('a rejected edit leaves the buffer unchanged', function()
  local before = vim.api.nvim_buf_get_lines(app, 0, -1, false)
  chat.send('try another greeting')
  wait_for('the diff review', function()
    return review.pending[1] ~= nil
  end)
  assert(review.resolve('reject'))
  wait_for('the turn to end', function()
    return chat.last_result ~= nil
  end)
  eq(before, vim.api.nvim_buf_get_lines(app, 0, -1, false), 'buffer')
  assert(contains(chat.lines(), 'Understood, leaving it.'), vim.inspect(chat.lines()))
end)

test('a command permission is asked with vim.ui.select', function()
  local asked
  vim.ui.select = function(items, opts, on_choice)
    asked = opts.prompt
    for _, item in ipairs(items) do
      if item.optionId == 'allow_once' then
        return on_choice(item)
      end
    end
  end
  local result = turn('run it')
  assert(asked and asked:find('echo kiln%-ran'), tostring(asked))
  eq('end_turn', result.stopReason, 'stopReason')
  assert(contains(chat.lines(), '✓ run_command'), vim.inspect(chat.lines()))
end)

test('an accepted edit to a file that is not open is written to disk', function()
  chat.send('update the notes')
  wait_for('the diff review', function()
    return review.pending[1] ~= nil
  end)
  eq(-1, vim.fn.bufnr(ws .. '/notes.txt'), 'notes.txt is not open')
  review.resolve('accept')
  wait_for('the turn to end', function()
    return chat.last_result ~= nil
  end)
  eq('end_turn', chat.last_result.stopReason, 'stopReason')
  eq({ 'second note' }, vim.fn.readfile(ws .. '/notes.txt'), 'notes.txt on disk')
end)

test('an edit accepted after the user changed the buffer is not applied', function()
  chat.send('one more edit')
  wait_for('the diff review', function()
    return review.pending[1] ~= nil
  end)
  vim.api.nvim_buf_set_lines(app, 0, 0, false, { '# typed by the user' })
  review.resolve('accept')
  wait_for('the turn to end', function()
    return chat.last_result ~= nil
  end)
  local text = table.concat(vim.api.nvim_buf_get_lines(app, 0, -1, false), '\n')
  assert(text:find('# typed by the user', 1, true), text)
  assert(not text:find('yo ', 1, true), 'the stale edit was applied: ' .. text)
  assert(contains(chat.lines(), 'The buffer moved on.'), vim.inspect(chat.lines()))
  vim.api.nvim_buf_set_lines(app, 0, 1, false, {})
end)

test('deferred edits wait for :KilnEdits', function()
  local switched
  chat.set_mode({ editMode = 'deferred' }, function(err, res)
    switched = err or res
  end)
  wait_for('setMode', function()
    return switched ~= nil
  end)
  eq('deferred', switched.editMode, 'editMode')
  local result = turn('propose something')
  eq('end_turn', result.stopReason, 'stopReason')
  eq('    return "hi " + name', vim.api.nvim_buf_get_lines(app, 1, 2, false)[1], 'not applied yet')
  assert(contains(chat.lines(), ':KilnEdits'), vim.inspect(chat.lines()))
  local done = false
  require('kiln.edits').review_pending(function()
    done = true
  end)
  wait_for('the deferred review', function()
    return review.pending[1] ~= nil
  end)
  review.resolve('accept')
  wait_for('the proposal to be resolved', function()
    return done
  end)
  eq('    return "hey " + name', vim.api.nvim_buf_get_lines(app, 1, 2, false)[1], 'applied')
  switched = nil
  chat.set_mode({ editMode = 'ask' }, function(err, res)
    switched = err or res
  end)
  wait_for('setMode', function()
    return switched ~= nil
  end)
end)

test(':KilnStop while a review is open withdraws it and leaves the buffer', function()
  local before = vim.api.nvim_buf_get_lines(app, 0, -1, false)
  chat.send('edit again')
  wait_for('the diff review', function()
    return review.pending[1] ~= nil
  end)
  local review_buf = review.pending[1].buf
  vim.cmd('KilnStop')
  wait_for('the turn to end', function()
    return chat.last_result ~= nil
  end)
  eq('cancelled', chat.last_result.stopReason, 'stopReason')
  eq(0, #review.pending, 'open reviews')
  eq(false, vim.api.nvim_buf_is_valid(review_buf), 'review buffer closed')
  eq(before, vim.api.nvim_buf_get_lines(app, 0, -1, false), 'buffer')
end)

test(':KilnStop cancels a long turn', function()
  chat.send('take your time')
  wait_for('the turn to start', function()
    return chat.state.busy
  end)
  vim.wait(300)
  vim.cmd('KilnStop')
  wait_for('the turn to end', function()
    return chat.last_result ~= nil
  end, 10000)
  eq('cancelled', chat.last_result.stopReason, 'stopReason')
  assert(contains(chat.lines(), '— cancelled'), vim.inspect(chat.lines()))
end)

if vim.env.KILN_REGISTRY then
  test(':KilnSkills searches the registry, shows the review and installs on yes', function()
    local prompts = {}
    vim.ui.select = function(items, opts, on_choice)
      table.insert(prompts, opts.prompt)
      on_choice(opts.kind == 'kiln.confirm' and 'Install' or items[1])
    end
    local finished, result
    require('kiln.skills').search('pdf forms', nil, function(err, res)
      finished, result = true, err or res
    end)
    wait_for('the install', function()
      return finished
    end)
    eq('acme/pdf-forms', result.id, vim.inspect(result))
    eq('installed', result.action, 'action')
    assert(prompts[1]:find('pdf forms', 1, true), prompts[1])
    assert(prompts[2]:find('Install acme/pdf-forms@1.0.0?', 1, true), tostring(prompts[2]))
    eq(1, vim.fn.filereadable(result.path .. '/SKILL.md'), 'SKILL.md installed')
    assert(vim.startswith(vim.fs.normalize(result.path), ws .. '/'), result.path)
    local listed
    require('kiln.skills').list(function(err, res)
      listed = err or res
    end)
    wait_for('the list', function()
      return listed ~= nil
    end)
    eq(
      'pdf-forms',
      listed.skills and listed.skills[1] and listed.skills[1].name,
      vim.inspect(listed)
    )
  end)

  test(':KilnSkills install is not done when the user declines', function()
    vim.ui.select = function(_, _, on_choice)
      on_choice('Cancel')
    end
    local finished, result = false, 'unset'
    require('kiln.skills').install('acme/lint-rules', nil, function(err, res)
      finished, result = true, err or res
    end)
    wait_for('the answer', function()
      return finished
    end)
    eq(nil, result, 'result')
    eq(0, vim.fn.isdirectory(ws .. '/.kiln/skills/lint-rules'), 'not installed')
  end)
else
  io.stdout:write('ok - # SKIP :KilnSkills (KILN_REGISTRY is not set)\n')
end

test(':KilnChat float opens the chat in floating windows', function()
  chat.close()
  vim.cmd('KilnChat float')
  eq('editor', vim.api.nvim_win_get_config(chat.state.win).relative, 'transcript window')
  eq('editor', vim.api.nvim_win_get_config(chat.state.input_win).relative, 'input window')
  assert(contains(chat.lines(), 'Hello from Kiln'), 'the same transcript')
  chat.close()
end)

local first_session
test('a review the server stops waiting for is withdrawn', function()
  first_session = chat.state.session_id
  chat.reset()
  require('kiln.config').options.session = { permissionTimeout = 1 }
  local before = vim.api.nvim_buf_get_lines(app, 0, -1, false)
  chat.send('timeout-please')
  wait_for('the diff review', function()
    return review.pending[1] ~= nil
  end)
  wait_for('the review to be withdrawn', function()
    return review.pending[1] == nil
  end, 10000)
  wait_for('the turn to end', function()
    return chat.last_result ~= nil
  end)
  eq('end_turn', chat.last_result.stopReason, 'stopReason')
  eq(before, vim.api.nvim_buf_get_lines(app, 0, -1, false), 'buffer')
  assert(not contains(chat.lines(), 'say hello'), 'a new session starts an empty transcript')
end)

test(':checkhealth kiln reports the command and the running client', function()
  vim.cmd('silent checkhealth kiln')
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  assert(text:find('server command: ' .. python, 1, true), text)
  assert(text:find('client %d+ for ' .. vim.pesc(ws)), text)
  vim.cmd('bwipeout')
end)

-- A second server with its own script, for the tests that end the server or the review early.
local function restart(steps)
  require('kiln.client').stop()
  wait_for('the old client to stop', function()
    return #vim.lsp.get_clients({ name = 'kiln' }) == 0
  end)
  local path = vim.fn.tempname() .. '-script.json'
  write(path, vim.json.encode(steps))
  vim.env.KILN_SCRIPT = path
  chat.reset()
  require('kiln.config').options.session = {}
  vim.api.nvim_set_current_win(vim.fn.bufwinid(app))
  kiln.setup({ cmd = { python, '-m', 'lsp_server', 'lsp' }, init_options = { index = false } })
  wait_for('the new client', function()
    local c = vim.lsp.get_clients({ name = 'kiln' })[1]
    return c ~= nil and c.initialized == true
  end)
end

restart({
  { text = 'Proposing.', tool_calls = { edit('greet', 'salute') } },
  'Fine, no edit.',
  { sleep = 60 },
})

test(':KilnResume replays a session stored by the earlier server', function()
  assert(first_session, 'no first session')
  local listed
  vim.ui.select = function(items, opts, on_choice)
    listed = items
    for _, item in ipairs(items) do
      if item.sessionId == first_session then
        return on_choice(item)
      end
    end
    on_choice(nil)
  end
  local done
  require('kiln.chat').pick_session(function(err, res)
    done = err or res or 'declined'
  end)
  wait_for('the session to load', function()
    return done ~= nil
  end)
  eq(first_session, done.sessionId, vim.inspect(done))
  assert(#listed >= 2, 'both sessions are listed')
  local lines = chat.lines()
  assert(contains(lines, 'say hello'), vim.inspect(lines))
  assert(contains(lines, 'Hello from Kiln, a streamed answer.'), vim.inspect(lines))
  assert(contains(lines, 'resumed session ' .. first_session), vim.inspect(lines))
end)

test('closing the review window rejects the edit', function()
  local before = vim.api.nvim_buf_get_lines(app, 0, -1, false)
  chat.send('close it')
  wait_for('the diff review', function()
    return review.pending[1] ~= nil
  end)
  vim.api.nvim_set_current_win(review.pending[1].win)
  vim.cmd('close')
  wait_for('the turn to end', function()
    return chat.last_result ~= nil
  end)
  eq('end_turn', chat.last_result.stopReason, 'stopReason')
  eq(before, vim.api.nvim_buf_get_lines(app, 0, -1, false), 'buffer')
  assert(contains(chat.lines(), 'Fine, no edit.'), vim.inspect(chat.lines()))
end)

test('a server that dies mid-turn ends the turn with a message', function()
  chat.send('wait for me')
  wait_for('the turn to start', function()
    return chat.state.busy and chat.state.session_id ~= nil
  end)
  vim.wait(300)
  local children = vim.api.nvim_get_proc_children(vim.fn.getpid())
  assert(#children > 0, 'no server process')
  for _, pid in ipairs(children) do
    vim.uv.kill(pid, 'sigkill')
  end
  wait_for('the turn to end', function()
    return chat.last_result ~= nil
  end)
  assert(chat.last_result.error, vim.inspect(chat.last_result))
  eq(false, chat.state.busy, 'busy')
  assert(contains(chat.lines(), 'the server exited'), vim.inspect(chat.lines()))
end)

require('kiln.client').stop()
vim.wait(2000, function()
  return #vim.lsp.get_clients({ name = 'kiln' }) == 0
end)
io.stdout:write(string.format('# %d passed, %d failed\n', results.passed, results.failed))
os.exit(results.failed == 0 and 0 or 1)
