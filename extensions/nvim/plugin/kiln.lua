-- User commands for Kiln. Loading this file only defines commands; nothing starts until
-- require("kiln").setup{} or the first command runs.
if vim.g.loaded_kiln then
  return
end
vim.g.loaded_kiln = true

-- An older Neovim lacks APIs the plugin uses (vim.fs.root, client:stop()…): every command says
-- so in one line instead of failing with a traceback; require("kiln").setup{} does the same.
if vim.fn.has('nvim-0.11') == 0 then
  local names = { 'KilnChat', 'KilnAsk', 'KilnEdit', 'KilnAdd', 'KilnModel', 'KilnStop' }
  vim.list_extend(names, { 'KilnNew', 'KilnRestart', 'KilnResume', 'KilnEdits', 'KilnSkills', 'KilnMode' })
  for _, name in ipairs(vim.list_extend(names, { 'KilnEditMode' })) do
    vim.api.nvim_create_user_command(name, function()
      require('kiln').setup()
    end, { nargs = '*', range = true, desc = 'Kiln: needs Neovim 0.11 or later' })
  end
  return
end

local function cmd(name, fn, opts)
  vim.api.nvim_create_user_command(name, fn, opts)
end

cmd('KilnChat', function(o)
  require('kiln').chat(o.args)
end, {
  nargs = '?',
  complete = function()
    return { 'vsplit', 'split', 'float' }
  end,
  desc = 'Kiln: open the chat',
})

cmd('KilnAsk', function(o)
  local line1, line2 = o.line1, o.line2
  if o.range == 0 then
    line1, line2 = 1, vim.api.nvim_buf_line_count(0)
  end
  require('kiln').ask(o.args, 0, line1, line2)
end, { nargs = '*', range = true, desc = 'Kiln: ask about the selected lines' })

cmd('KilnEdit', function(o)
  local line1, line2 = o.line1, o.line2
  if o.range == 0 then
    line1, line2 = vim.fn.line('.'), vim.fn.line('.')
  end
  require('kiln').edit(o.args, 0, line1, line2)
end, { nargs = '*', range = true, desc = 'Kiln: edit the selected lines as told' })

cmd('KilnAdd', function(o)
  if o.args == 'clear' then
    return require('kiln.input').clear_context()
  elseif o.args ~= '' then
    -- a typo (`:KilnAdd clera`) would add the whole buffer as context instead of clearing it
    local said = ('kiln: :KilnAdd takes no word but "clear", not "%s"'):format(o.args)
    return vim.notify(said, vim.log.levels.ERROR)
  end
  local line1, line2 = o.line1, o.line2
  if o.range == 0 then
    line1, line2 = 1, vim.api.nvim_buf_line_count(0)
  end
  require('kiln').add(0, line1, line2)
end, { nargs = '?', range = true, desc = 'Kiln: add the selection as context of the next question' })

cmd('KilnModel', function(o)
  if o.args ~= '' then
    require('kiln.commands').set_model(o.args)
  else
    require('kiln.commands').pick_model()
  end
end, { nargs = '?', desc = 'Kiln: the model of the next session' })

cmd('KilnStop', function()
  require('kiln').stop()
end, { desc = 'Kiln: cancel the running turn' })

cmd('KilnNew', function()
  require('kiln.chat').reset()
end, { desc = 'Kiln: start a new session' })

cmd('KilnRestart', function()
  require('kiln.restart').restart()
end, { desc = "Kiln: restart the chat's server; the session goes on" })

cmd('KilnResume', function()
  require('kiln.chat').pick_session()
end, { desc = 'Kiln: resume a stored session' })

cmd('KilnEdits', function()
  require('kiln.edits').review_pending()
end, { desc = 'Kiln: review deferred edits' })

cmd('KilnSkills', function(o)
  require('kiln.skills').command(o.args)
end, { nargs = '*', desc = 'Kiln: search, install or list skills' })

cmd('KilnMode', function(o)
  require('kiln.chat').set_mode({ mode = o.args })
end, {
  nargs = 1,
  complete = function()
    return require('kiln.chat').MODES
  end,
  desc = 'Kiln: what the agent may do without asking',
})

cmd('KilnEditMode', function(o)
  require('kiln.chat').set_mode({ editMode = o.args })
end, {
  nargs = 1,
  complete = function()
    return require('kiln.chat').EDIT_MODES
  end,
  desc = 'Kiln: how edits reach files',
})
