-- End-to-end tests of the Kiln plugin: real headless Neovim against a real `kiln lsp`
-- (python -m lsp_server lsp) driven by the in-package scripted model. This file holds one
-- session's story; lifecycle.lua continues with new sessions, a second server and skills.
-- Run: nvim --headless --clean -l extensions/nvim/tests/run.lua
-- Env: KILN_PYTHON (interpreter with Kiln installed, default python3); KILN_REGISTRY (a
-- registry with acme/pdf-forms and acme/lint-rules, for the skills tests); KILN_HOME is set to
-- a temp dir here unless given.
local here = vim.fs.dirname(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p'))
local plugin_root = vim.fs.dirname(here)
vim.opt.rtp:prepend(plugin_root)
vim.cmd('runtime plugin/kiln.lua')

local H = dofile(here .. '/harness.lua')
local test, eq, wait_for, contains, write = H.test, H.eq, H.wait_for, H.contains, H.write
local notes = H.notes
local python = vim.env.KILN_PYTHON or 'python3'

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
  'Hello from Kiln, a streamed answer.\nIt has a second line.',
  'Typed prompt received.',
  { match = 'marker-7731', text = 'I saw the selection.' },
  { match = 'scratch-9913', text = 'I saw the scratch text.' },
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
  {
    text = 'Creating a file.',
    tool_calls = {
      { name = 'write_file', input = { path = 'docs/created.md', content = '# Made by Kiln\n' } },
    },
  },
  'Created.',
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
  assert(msg:find('kiln%-not%-installed%-anywhere') and msg:find('`pip install -e .` in a checkout', 1, true) and not msg:find('kiln%-agent'), msg)
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
  eq('kiln-prompt', vim.bo[vim.api.nvim_win_get_buf(chat.state.input_win)].filetype, 'input buffer')
  local result = turn('say hello')
  eq('end_turn', result.stopReason, 'stopReason')
  local lines = chat.lines()
  local at = vim.fn.index(lines, 'Hello from Kiln, a streamed answer.')
  assert(at >= 0, vim.inspect(lines))
  eq('It has a second line.', lines[at + 2], 'the second line of the answer')
  -- The window bar carries the session cost from usage_update, and no "working" once done.
  eq('Kiln · ask · edits ask · $0.0000', vim.wo[chat.state.win].winbar, 'winbar')
  assert(contains(lines, 'say hello'), 'the user line is shown')
end)

test('Enter in the prompt buffer sends what was typed', function()
  vim.api.nvim_set_current_win(chat.state.input_win)
  chat.last_result = nil
  vim.api.nvim_feedkeys(
    vim.keycode('A') .. 'typed question' .. vim.keycode('<CR><Esc>'),
    'xt',
    false
  )
  wait_for('the turn to end', function()
    return chat.last_result ~= nil
  end)
  eq('end_turn', chat.last_result.stopReason, 'stopReason')
  local lines = chat.lines()
  assert(contains(lines, 'typed question'), vim.inspect(lines))
  assert(contains(lines, 'Typed prompt received.'), vim.inspect(lines))
  vim.api.nvim_set_current_win(vim.fn.bufwinid(app))
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

test(':KilnAsk on a scratch buffer sends the text itself', function()
  local scratch = vim.api.nvim_create_buf(true, true)
  vim.api.nvim_buf_set_lines(scratch, 0, -1, false, { 'first', 'token scratch-9913 here', 'last' })
  vim.api.nvim_set_current_buf(scratch)
  vim.cmd('2,2KilnAsk what is this?')
  wait_for('the turn to end', function()
    return chat.last_result ~= nil
  end)
  eq('end_turn', chat.last_result.stopReason, vim.inspect(chat.last_result))
  assert(contains(chat.lines(), 'I saw the scratch text.'), vim.inspect(chat.lines()))
  assert(contains(chat.lines(), '@untitled:buffer-' .. scratch), vim.inspect(chat.lines()))
  vim.api.nvim_buf_delete(scratch, { force = true })
  vim.api.nvim_set_current_win(vim.fn.bufwinid(app))
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
  assert(not contains(shown, 'external content'), 'no warning before any external content')
  -- Press the key in the review window, as a user would.
  eq(review.pending[1].buf, vim.api.nvim_get_current_buf(), 'the review has the focus')
  vim.api.nvim_feedkeys('a', 'xt', false)
  wait_for('the turn to end', function()
    return chat.last_result ~= nil
  end)
  eq('end_turn', chat.last_result.stopReason, 'stopReason')
  eq('    return "hi " + name', vim.api.nvim_buf_get_lines(app, 1, 2, false)[1], 'buffer line')
  local lines = chat.lines()
  assert(contains(lines, 'Plan:') and contains(lines, 'Shorten the greeting'), 'plan shown')
  assert(contains(lines, '✓ edit_file: app.py — applied'), vim.inspect(lines))
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
  eq(review.pending[1].buf, vim.api.nvim_get_current_buf(), 'the review has the focus')
  vim.api.nvim_feedkeys('r', 'xt', false)
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
  -- Command output came first, but an ordinary workspace edit is not what injected text would
  -- want, so the server does not mark it fromExternal (docs/security.md section 7).
  local shown = vim.api.nvim_buf_get_lines(review.pending[1].buf, 0, -1, false)
  assert(not shown[1]:find('external content', 1, true), vim.inspect(shown))
  eq(-1, vim.fn.bufnr(ws .. '/notes.txt'), 'notes.txt is not open')
  review.resolve('accept')
  wait_for('the turn to end', function()
    return chat.last_result ~= nil
  end)
  eq('end_turn', chat.last_result.stopReason, 'stopReason')
  eq({ 'second note' }, vim.fn.readfile(ws .. '/notes.txt'), 'notes.txt on disk')
end)

test('an accepted new file is created on disk', function()
  chat.send('create a file')
  wait_for('the diff review', function()
    return review.pending[1] ~= nil
  end)
  local shown = vim.api.nvim_buf_get_lines(review.pending[1].buf, 0, -1, false)
  assert(contains(shown, '+# Made by Kiln'), vim.inspect(shown))
  review.resolve('accept')
  wait_for('the turn to end', function()
    return chat.last_result ~= nil
  end)
  eq('end_turn', chat.last_result.stopReason, 'stopReason')
  eq({ '# Made by Kiln' }, vim.fn.readfile(ws .. '/docs/created.md'), 'docs/created.md')
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
  assert(
    contains(chat.lines(), '✗ edit_file: app.py — app.py changed while the edit was proposed'),
    vim.inspect(chat.lines())
  )
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

test('the nvim-cmp and blink.cmp sources complete @ and / from the server', function()
  -- Called the way nvim-cmp and blink.cmp call a source; the items come from the real server.
  local got
  require('kiln.complete').cmp_source.new():complete({
    context = { cursor_before_line = 'look at @app', cursor = { row = 1 } },
  }, function(res)
    got = res
  end)
  wait_for('the cmp items', function()
    return got ~= nil
  end)
  local labels = vim.tbl_map(function(i)
    return i.label
  end, got.items)
  assert(vim.tbl_contains(labels, '@app.py'), vim.inspect(labels))
  local blink
  require('kiln.blink').new():get_completions({ line = '/cle', cursor = { 1, 4 } }, function(res)
    blink = res
  end)
  wait_for('the blink items', function()
    return blink ~= nil
  end)
  eq('/clear ', blink.items[1].label, 'blink item')
  eq({ start = { line = 0, character = 0 }, ['end'] = { line = 0, character = 4 } }, blink.items[1].textEdit.range, 'range')
end)

test('a code block naming a file outside the workspace is not applied', function()
  local outside = vim.fs.dirname(ws) .. '/outside-kiln.py'
  write(outside, 'keep = 1\n')
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { '```python ../outside-kiln.py', 'owned = 1', '```' })
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  vim.api.nvim_win_set_cursor(win, { 2, 0 })
  local asked = false
  local confirm = vim.fn.confirm
  vim.fn.confirm = function()
    asked = true
    return 1
  end
  require('kiln.codeblock').apply()
  vim.fn.confirm = confirm
  eq(false, asked, 'asked to confirm')
  assert(notes[#notes].msg:find('not a file in this workspace', 1, true), notes[#notes].msg)
  eq({ 'keep = 1' }, vim.fn.readfile(outside), 'the outside file')
  eq(
    { code = 'owned = 1\n', lang = 'python', target = '../outside-kiln.py' },
    require('kiln.codeblock').at({ '```python ../outside-kiln.py', 'owned = 1', '```' }, 2),
    'parsed block'
  )
  vim.api.nvim_win_set_buf(win, app)
  vim.api.nvim_buf_delete(buf, { force = true })
end)

dofile(here .. '/lifecycle.lua')({
  H = H,
  ws = ws,
  app = app,
  python = python,
  edit = edit,
})

test('the plugin sets no global variables', function()
  eq({}, H.leaked_globals, 'globals')
end)

require('kiln.client').stop()
vim.wait(2000, function()
  return #vim.lsp.get_clients({ name = 'kiln' }) == 0
end)
H.finish()
