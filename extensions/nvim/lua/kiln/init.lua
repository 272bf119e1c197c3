-- Kiln for Neovim: a thin client of `kiln lsp`. setup{} stores the options and starts the
-- server for the workspace; the commands in plugin/kiln.lua call the functions below.
local M = {}

--- Configure the plugin and, unless auto_start is false, start `kiln lsp` for the workspace.
--- On a Neovim older than 0.11, one error line and nothing else.
function M.setup(opts)
  if vim.fn.has('nvim-0.11') == 0 then
    local v = vim.version()
    vim.notify(
      string.format(
        'kiln: Neovim 0.11 or later is required (this is %d.%d.%d)',
        v.major,
        v.minor,
        v.patch
      ),
      vim.log.levels.ERROR
    )
    return
  end
  local config = require('kiln.config')
  config.set(opts)
  if config.options.keymaps then
    M.keymaps()
  end
  if config.options.auto_start then
    require('kiln.client').start()
  end
end

--- :KilnChat [layout] — open the chat; `layout` is 'vsplit', 'split' or 'float'.
local LAYOUTS = { vsplit = true, split = true, float = true }

function M.chat(layout)
  layout = layout ~= '' and layout or nil
  if layout and not LAYOUTS[layout] then
    local said = ('kiln: unknown layout "%s" (vsplit, split or float)'):format(layout)
    vim.notify(said, vim.log.levels.ERROR)
    return
  end
  if require('kiln.client').get() then
    require('kiln.chat').open(layout)
  end
end

--- The path of `bufnr`'s file from its workspace root, or nil and why the agent cannot edit it.
function M.workspace_path(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' or vim.bo[bufnr].buftype ~= '' then
    return nil, 'this buffer has no file for the agent to edit (:write it into the workspace first)'
  end
  local full = vim.fs.normalize(vim.fn.fnamemodify(name, ':p'))
  local root = require('kiln.client').root(bufnr)
  if not vim.startswith(full, root .. '/') then
    return nil,
      string.format('%s is outside the workspace %s: the agent edits only files under it', full, root)
  end
  return full:sub(#root + 2)
end

--- A prompt block for lines [line1, line2] (1-based, inclusive) of `bufnr`: a resource_link
--- (the server reads the live buffer) for a file inside the workspace, else the text itself
--- as a resource, since the server only reads files under its root.
function M.reference(bufnr, line1, line2)
  local path = vim.api.nvim_buf_get_name(bufnr)
  local inside = M.workspace_path(bufnr) ~= nil
  if inside then
    return {
      type = 'resource_link',
      uri = vim.uri_from_bufnr(bufnr),
      name = vim.fs.basename(path),
      range = {
        start = { line = line1 - 1, character = 0 },
        ['end'] = { line = line2 - 1, character = 0 }, -- the end line is included
      },
    }
  end
  local lines = vim.api.nvim_buf_get_lines(bufnr, line1 - 1, line2, false)
  local name = path ~= '' and vim.fs.basename(path) or ('buffer-' .. bufnr)
  return {
    type = 'resource',
    resource = {
      uri = 'untitled:' .. name,
      mimeType = 'text/plain',
      text = table.concat(lines, '\n') .. '\n',
    },
  }
end

--- Make `bufnr`'s workspace the one the chat talks to, its server started if needed: the
--- question goes from the prompt (a scratch buffer, which talks to the workspace used last),
--- and only that workspace's server reads the file. False when the server cannot start.
local function use_workspace_of(bufnr)
  local client
  vim.api.nvim_buf_call(bufnr, function()
    client = require('kiln.client').get()
  end)
  return client ~= nil
end

--- Ask with a reference to lines [line1, line2] (1-based, inclusive) of buffer `bufnr`.
--- Without `question`, ask for one with vim.ui.input.
function M.ask(question, bufnr, line1, line2)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local function go(text)
    if not text or vim.trim(text) == '' then
      return
    end
    if not use_workspace_of(bufnr) then
      return
    end
    local blocks = { M.reference(bufnr, line1, line2) }
    local chat = require('kiln.chat')
    chat.open()
    chat.send(text, blocks)
  end
  if question and vim.trim(question) ~= '' then
    go(question)
  else
    vim.ui.input({ prompt = 'Ask Kiln about the selection: ' }, go)
  end
end

--- :KilnAdd — lines [line1, line2] of `bufnr` become a context pill of the next question.
function M.add(bufnr, line1, line2)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if not use_workspace_of(bufnr) then -- the question with this pill goes to its server
    return
  end
  local block = M.reference(bufnr, line1, line2)
  local name = vim.fs.basename(vim.api.nvim_buf_get_name(bufnr))
  local label = string.format('@%s:%d-%d', name ~= '' and name or ('buffer-' .. bufnr), line1, line2)
  require('kiln.chat').open()
  require('kiln.input').add_context(block, label)
end

--- :KilnEdit — ask the agent to change lines [line1, line2] of `bufnr` as `instruction` says;
--- the edit comes back through the usual review (per hunk). Without an instruction, ask for one.
function M.edit(instruction, bufnr, line1, line2)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  -- The agent edits files by their path from the workspace root (not from Neovim's cwd).
  local path, why = M.workspace_path(bufnr)
  if not path then
    vim.notify('kiln: ' .. why, vim.log.levels.ERROR)
    return
  end
  local function go(text)
    if not text or vim.trim(text) == '' then
      return
    end
    local question = string.format(
      'Edit lines %d-%d of %s: %s\nChange only those lines, with edit_file; no explanation needed.',
      line1,
      line2,
      path,
      vim.trim(text)
    )
    if not use_workspace_of(bufnr) then
      return
    end
    local from = vim.api.nvim_get_current_win()
    local chat = require('kiln.chat')
    chat.open()
    chat.send(question, { M.reference(bufnr, line1, line2) }, nil, {
      string.format('@%s:%d-%d', vim.fs.basename(path), line1, line2),
    })
    if vim.api.nvim_win_is_valid(from) then
      vim.api.nvim_set_current_win(from)
    end
  end
  if instruction and vim.trim(instruction) ~= '' then
    go(instruction)
  else
    vim.ui.input({ prompt = 'Kiln: edit the selection to… ' }, go)
  end
end

--- Default mappings (setup{ keymaps = false } turns them off); a key already mapped is kept.
function M.keymaps()
  local maps = {
    { 'n', '<leader>kc', '<Cmd>KilnChat<CR>', 'open the chat' },
    { 'x', '<leader>ka', ':KilnAsk<CR>', 'ask about the selection' },
    { 'x', '<leader>ki', ':KilnEdit<CR>', 'edit the selection' },
    { 'x', '<C-i>', ':KilnEdit<CR>', 'edit the selection' },
    { 'x', '<leader>k+', ':KilnAdd<CR>', 'add the selection as context' },
    { 'n', '<leader>ks', '<Cmd>KilnStop<CR>', 'stop the turn' },
    { 'n', '<leader>ke', '<Cmd>KilnEdits<CR>', 'review deferred edits' },
  }
  for _, m in ipairs(maps) do
    if vim.fn.maparg(m[2], m[1]) == '' then
      vim.keymap.set(m[1], m[2], m[3], { desc = 'Kiln: ' .. m[4], silent = true })
    end
  end
end

function M.stop()
  return require('kiln.chat').stop()
end

return M
