-- Options for the Kiln plugin: defaults merged with what the user passes to setup{}.
-- Kept apart so every module reads the same table and tests can reset it.
local M = {}

M.defaults = {
  -- Command that starts the language server; a list, as vim.lsp.start expects.
  cmd = { 'kiln', 'lsp' },
  -- Extra environment for the server process (e.g. { KILN_PROVIDER = 'anthropic' }).
  cmd_env = nil,
  -- Files or folders that mark the workspace root (searched upwards from the buffer).
  root_markers = { '.kiln', '.git', 'pyproject.toml', 'package.json' },
  -- Sent as initializationOptions (provider, model, mode, editMode, ...; see PROTOCOL.md).
  init_options = {},
  -- Extra kiln/session/new parameters for each new chat session (mode, editMode,
  -- permissionTimeout, maxSteps, provider, model).
  session = {},
  -- Answered when the server asks workspace/configuration for section "kiln".
  settings = {},
  -- Start the server as soon as setup{} runs (otherwise on the first :Kiln* command).
  auto_start = true,
  -- Default mappings (<leader>kc chat, visual <leader>ka ask, <leader>ki / <C-i> edit the
  -- selection, <leader>k+ add it as context, <leader>ks stop, <leader>ke deferred edits);
  -- keys you already mapped are left alone.
  keymaps = true,
  chat = {
    layout = 'vsplit', -- 'vsplit', 'split' or 'float'
    width = 0.4, -- fraction of the editor (vsplit, float)
    height = 0.4, -- fraction of the editor (split, float)
    input_height = 3,
  },
  review = {
    layout = 'tab', -- 'tab' or 'float'
  },
}

M.options = vim.deepcopy(M.defaults)

-- The words each layout option takes; another is said in one line and the default kept.
local LAYOUTS = {
  chat = { 'vsplit', 'split', 'float' },
  review = { 'tab', 'float' },
}

local function either(words)
  return table.concat(words, ', ', 1, #words - 1) .. ' or ' .. words[#words]
end

function M.set(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  for part, words in pairs(LAYOUTS) do
    local given = M.options[part].layout
    if not vim.tbl_contains(words, given) then
      local default = M.defaults[part].layout
      local said = ('kiln: %s.layout "%s" is not %s: using %s'):format(
        part,
        tostring(given),
        either(words),
        default
      )
      vim.notify(said, vim.log.levels.WARN)
      M.options[part].layout = default
    end
  end
  return M.options
end

return M
