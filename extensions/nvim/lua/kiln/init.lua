-- Kiln for Neovim: a thin client of `kiln lsp`. setup{} stores the options and starts the
-- server for the workspace; the commands in plugin/kiln.lua call the functions below.
local config = require('kiln.config')

local M = {}

--- Configure the plugin and, unless auto_start is false, start `kiln lsp` for the workspace.
function M.setup(opts)
  config.set(opts)
  if config.options.auto_start then
    require('kiln.client').start()
  end
end

--- :KilnChat [layout] — open the chat; `layout` is 'vsplit', 'split' or 'float'.
function M.chat(layout)
  if require('kiln.client').get() then
    require('kiln.chat').open(layout ~= '' and layout or nil)
  end
end

--- A prompt block for lines [line1, line2] (1-based, inclusive) of `bufnr`: a resource_link
--- (the server reads the live buffer) for a file inside the workspace, else the text itself
--- as a resource, since the server only reads files under its root.
function M.reference(bufnr, line1, line2)
  local path = vim.api.nvim_buf_get_name(bufnr)
  local root = require('kiln.client').current_root()
  local inside = path ~= ''
    and vim.bo[bufnr].buftype == ''
    and vim.startswith(vim.fs.normalize(vim.fn.fnamemodify(path, ':p')), root .. '/')
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

--- Ask with a reference to lines [line1, line2] (1-based, inclusive) of buffer `bufnr`.
--- Without `question`, ask for one with vim.ui.input.
function M.ask(question, bufnr, line1, line2)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local function go(text)
    if not text or vim.trim(text) == '' then
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

function M.stop()
  return require('kiln.chat').stop()
end

return M
