-- The second half of the plugin suite: skills against a real registry, the float layout, a
-- review the server withdraws, :checkhealth, then a second server (resume a stored session,
-- close a review window, a server that dies mid-turn). Called by run.lua with its context.
return function(ctx)
  local H, ws, app, python, edit = ctx.H, ctx.ws, ctx.app, ctx.python, ctx.edit
  local test, eq, wait_for, contains, write = H.test, H.eq, H.wait_for, H.contains, H.write
  local kiln = require('kiln')
  local chat = require('kiln.chat')
  local review = require('kiln.review')

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
  test('a session the server refuses ends the prompt with its message', function()
    first_session = chat.state.session_id
    chat.reset()
    require('kiln.config').options.session = { mode = 'bogus' }
    chat.send('anything')
    wait_for('the answer', function()
      return chat.last_result ~= nil
    end)
    local err = chat.last_result.error
    assert(err and err.message:find('bogus', 1, true), vim.inspect(chat.last_result))
    eq(false, chat.state.busy, 'busy')
    assert(contains(chat.lines(), '[error] kiln: '), vim.inspect(chat.lines()))
  end)

  test('a review the server stops waiting for is withdrawn', function()
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

  test('the server withdrawing one review leaves the others open', function()
    chat.reset()
    require('kiln.config').options.session = { permissionTimeout = 60 }
    chat.send('timeout-please')
    wait_for('the chat review', function()
      return review.pending[1] ~= nil
    end)
    local kept = review.pending[1]
    -- A second session on the same server whose question times out at once: the server
    -- sends $/cancelRequest for that request, which is the newer of the two.
    local client = require('kiln.client')
    local other
    client.request('kiln/session/new', { cwd = ws, permissionTimeout = 1 }, function(err, res)
      assert(not err, vim.inspect(err))
      local prompt = { { type = 'text', text = 'timeout-please' } }
      local params = { sessionId = res.sessionId, prompt = prompt }
      client.request('kiln/session/prompt', params, function(e, r)
        other = e or r
      end)
    end)
    wait_for('the second review', function()
      return #review.pending == 2
    end)
    wait_for('the second session to end', function()
      return other ~= nil
    end, 10000)
    eq('end_turn', other.stopReason, vim.inspect(other))
    eq(1, #review.pending, 'open reviews')
    assert(review.pending[1] == kept, 'the chat review is still the open one')
    assert(vim.api.nvim_win_is_valid(kept.win), 'its window is open')
    eq(true, chat.state.busy, 'the chat turn still waits')
    review.resolve('reject')
    wait_for('the turn to end', function()
      return chat.last_result ~= nil
    end)
    eq('end_turn', chat.last_result.stopReason, 'stopReason')
  end)

  test(':checkhealth kiln reports the command and the running client', function()
    vim.cmd('silent checkhealth kiln')
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
    assert(text:find('server command: ' .. python, 1, true), text)
    assert(text:find('client %d+ for ' .. vim.pesc(ws)), text)
    assert(text:find('protocol 1, mode ask', 1, true), text)
    assert(text:find('index: ', 1, true), text)
    vim.cmd('bwipeout')
  end)

  -- A second server with its own script, for the tests that end the server or the review early.
  local function restart(steps, init_options)
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
    kiln.setup({ cmd = { python, '-m', 'lsp_server', 'lsp' }, init_options = init_options })
    wait_for('the new client', function()
      local c = vim.lsp.get_clients({ name = 'kiln' })[1]
      return c ~= nil and c.initialized == true
    end)
  end

  restart({
    { text = 'Proposing.', tool_calls = { edit('greet', 'salute') } },
    'Fine, no edit.',
    { sleep = 60 },
  }, { index = false, mode = 'bogus' })

  test('init_options the server refuses are reported in one line', function()
    local found
    wait_for('the kiln/hello answer', function()
      for _, n in ipairs(H.notes) do
        if n.msg:find('^kiln: init_options: ') then
          found = n
        end
      end
      return found ~= nil
    end, 5000)
    eq(vim.log.levels.WARN, found.level, 'level')
    assert(found.msg:find('bogus', 1, true), found.msg)
  end)

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

  test('a prompt from another workspace goes to its own server and session', function()
    local ws2 = vim.fs.normalize(vim.fn.tempname() .. '-ws2')
    vim.fn.mkdir(ws2 .. '/.git', 'p')
    write(ws2 .. '/other.py', 'y = 2\n')
    local first = chat.state.session_id
    vim.cmd.edit(vim.fn.fnameescape(ws2 .. '/other.py'))
    chat.send('and here?')
    wait_for('the turn to end', function()
      return chat.last_result ~= nil
    end)
    eq('end_turn', chat.last_result.stopReason, vim.inspect(chat.last_result))
    assert(chat.state.session_id ~= first, 'a new session')
    local roots = {}
    for _, c in ipairs(vim.lsp.get_clients({ name = 'kiln' })) do
      roots[c.root_dir] = true
    end
    eq({ [ws] = true, [ws2] = true }, roots, 'one server per workspace')
    assert(contains(chat.lines(), 'now in ' .. ws2), vim.inspect(chat.lines()))
    vim.cmd.buffer(app)
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
end
