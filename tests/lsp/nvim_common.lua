-- What nvim_sync.lua and nvim_edits.lua share: starting Neovim's own LSP client on `kiln lsp`
-- with one position encoding, failing with one line, a buffer's text as saved, a request.
local M = {}

function M.fail(message)
  io.stdout:write("FAIL " .. message .. "\n")
  os.exit(1)
end

--- Start the client for ROOT offering ENCODING only; returns the client and its id.
function M.start(root, encoding, init_options, flags)
  local client_id = vim.lsp.start({
    name = "kiln",
    cmd = { os.getenv("KILN_PYTHON"), "-m", "lsp_server", "lsp" },
    root_dir = root,
    init_options = init_options,
    capabilities = { general = { positionEncodings = { encoding } } },
    flags = flags,
  }, { attach = false })
  if not client_id then
    M.fail("no client")
  end
  local client = assert(vim.lsp.get_client_by_id(client_id))
  if not vim.wait(30000, function() return client.initialized end, 20) then
    M.fail("not initialized")
  end
  if client.offset_encoding ~= encoding then
    M.fail("negotiated " .. tostring(client.offset_encoding))
  end
  return client, client_id
end

function M.text_of(buf)
  local eol = vim.bo[buf].fileformat == "dos" and "\r\n" or "\n"
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  return table.concat(lines, eol) .. (vim.bo[buf].eol and eol or "")
end

function M.request(client, method, params)
  local reply, err = client:request_sync(method, params, 120000)
  if err or not reply or reply.err then
    M.fail(method .. ": " .. vim.inspect(err or (reply and reply.err)))
  end
  return reply.result
end

return M
