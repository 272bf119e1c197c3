-- Applying the server's workspace/applyEdit. Neovim's default handler ignores a stale buffer
-- version and leaves edited buffers unsaved; the agent needs both done right: a buffer the user
-- typed in since the proposal is refused, and an edited file is saved so that the commands the
-- agent runs next see it — unless the buffer held the user's own unsaved changes.
local util = vim.lsp.util

local M = {}

--- URIs of edited buffers left unsaved because they held the user's own changes.
M.unsaved = {}

local function changed_uris(edit)
  local uris = {}
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.textDocument then
      table.insert(uris, change.textDocument.uri)
    end
  end
  for uri in pairs(edit.changes or {}) do
    table.insert(uris, uri)
  end
  return uris
end

--- The first document whose buffer moved past the version the server saw, if any.
local function stale_document(edit)
  for _, change in ipairs(edit.documentChanges or {}) do
    local doc = change.textDocument
    local version = doc and doc.version
    if type(version) == 'number' then
      local bufnr = vim.uri_to_bufnr(doc.uri)
      local current = util.buf_versions[bufnr]
      if vim.api.nvim_buf_is_loaded(bufnr) and current ~= nil and current ~= version then
        return doc.uri
      end
    end
  end
end

--- New files are written here, not through buffers: Neovim skips a `create` with
--- ignoreIfExists (no folder, no file), and inserting "text\n" into an empty buffer leaves a
--- trailing empty line the file would not have. Returns the rest of the edit, or nil and why.
local function create_files(edit)
  local changes = edit.documentChanges
  if not changes then
    return edit
  end
  local new = {}
  for _, change in ipairs(changes) do
    if
      change.kind == 'create'
      and change.uri
      and vim.fn.filereadable(vim.uri_to_fname(change.uri)) == 0
    then
      new[change.uri] = {}
    end
  end
  if next(new) == nil then
    return edit
  end
  local rest = {}
  for _, change in ipairs(changes) do
    local doc = change.textDocument
    if change.kind == 'create' and new[change.uri] then
      -- written below
    elseif doc and new[doc.uri] then
      for _, e in ipairs(change.edits or {}) do
        table.insert(new[doc.uri], e.newText or '')
      end
    else
      table.insert(rest, change)
    end
  end
  for uri, texts in pairs(new) do
    local fname = vim.uri_to_fname(uri)
    vim.fn.mkdir(vim.fs.dirname(fname), 'p')
    local file, err = io.open(fname, 'wb')
    if not file then
      return nil, 'could not create ' .. fname .. ': ' .. tostring(err)
    end
    -- Edits of an empty document all insert at 0:0; LSP keeps their array order.
    file:write(table.concat(texts))
    file:close()
  end
  return vim.tbl_extend('force', edit, { documentChanges = rest })
end

--- Handler for workspace/applyEdit; returns an ApplyWorkspaceEditResult.
function M.apply(params, ctx)
  local edit = params.edit or {}
  local stale = stale_document(edit)
  if stale then
    return {
      applied = false,
      failureReason = 'the buffer changed since the edit was proposed: ' .. vim.uri_to_fname(stale),
    }
  end
  -- A buffer the user made read-only (:view, 'readonly', 'nomodifiable') is not changed: the
  -- edit would be left in the buffer, unsaved, while the agent hears it failed.
  for _, uri in ipairs(changed_uris(edit)) do
    local bufnr = vim.uri_to_bufnr(uri)
    if
      vim.api.nvim_buf_is_loaded(bufnr)
      and (vim.bo[bufnr].readonly or not vim.bo[bufnr].modifiable)
    then
      return {
        applied = false,
        failureReason = vim.uri_to_fname(uri) .. ' is read-only in the editor',
      }
    end
  end
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  local encoding = client and client.offset_encoding or 'utf-16'
  local created, cerr = create_files(edit)
  if not created then
    return { applied = false, failureReason = cerr }
  end
  edit = created
  -- Which buffers held the user's own unsaved changes before the edit: those are not saved
  -- (that would write the user's half-typed text behind their back); every other edited
  -- buffer is saved, so the commands the agent runs next (tests, builds) see the edit.
  local dirty = {}
  for _, uri in ipairs(changed_uris(edit)) do
    local bufnr = vim.uri_to_bufnr(uri)
    dirty[uri] = vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].modified
  end
  local ok, err = pcall(util.apply_workspace_edit, edit, encoding)
  if not ok then
    return { applied = false, failureReason = tostring(err) }
  end
  for uri, was_dirty in pairs(dirty) do
    local bufnr = vim.uri_to_bufnr(uri)
    if was_dirty then
      M.unsaved[uri] = true
      vim.notify(
        string.format(
          'kiln: %s had unsaved changes of yours, so the edit was not saved; '
            .. ':write it for the agent\'s commands to see it',
          vim.fn.fnamemodify(vim.uri_to_fname(uri), ':~:.')
        ),
        vim.log.levels.WARN
      )
    else
      -- noautocmd: format-on-save hooks would change the text the server just computed.
      local wrote, werr = pcall(vim.api.nvim_buf_call, bufnr, function()
        vim.cmd('silent noautocmd keepalt write')
      end)
      if not wrote then
        return {
          applied = false,
          failureReason = 'could not write ' .. uri .. ': ' .. tostring(werr),
        }
      end
    end
  end
  return { applied = true }
end

--- :KilnEdits — review the session's deferred proposals one after another (editMode
--- "deferred"); each is accepted or rejected with kiln/edit/resolve, whole or per hunk.
function M.review_pending(cb)
  local client = require('kiln.client')
  local chat = require('kiln.chat').state
  local session = chat.session_id
  -- the server that holds the session (the prompt may talk to another workspace's since)
  local holder = chat.client_id and vim.lsp.get_client_by_id(chat.client_id) or nil
  client.request('kiln/edit/list', { sessionId = session }, function(err, result)
    if err then
      client.report(err, vim.log.levels.ERROR)
      return cb and cb(err)
    end
    local queue = result.edits or {}
    if #queue == 0 then
      vim.notify('kiln: no pending edits')
      return cb and cb(nil)
    end
    local options = {
      { optionId = 'accept', kind = 'allow_once' },
      { optionId = 'reject', kind = 'reject_once' },
    }
    local function next_one(i)
      local p = queue[i]
      if not p then
        return cb and cb(nil)
      end
      local root = holder and holder.root_dir or client.current_root()
      local diff = { path = root .. '/' .. p.path, oldText = p.oldText, newText = p.newText }
      require('kiln.review').open_diff(p.path, { diff }, options, function(choice, kept)
        if not choice then
          return cb and cb(nil)
        end
        -- Per-hunk review: `kept` is the file with only the hunks left ticked (s toggles one).
        local params = { proposalId = p.proposalId, decision = choice, newText = kept }
        client.request('kiln/edit/resolve', params, function(rerr, res)
          if rerr then
            client.report(rerr, vim.log.levels.WARN)
          else
            vim.notify(string.format('kiln: %s %s', p.path, res.outcome))
          end
          next_one(i + 1)
        end, holder)
      end, nil, true)
    end
    next_one(1)
  end, holder)
end

return M
