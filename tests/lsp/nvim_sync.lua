-- Neovim's own LSP client (no Kiln plugin) syncing buffers to `kiln lsp`, for
-- tests/lsp/test_nvim_sync_e2e.py. Usage: nvim --headless --clean -l nvim_sync.lua ROOT ENCODING
-- Edits buffers the way a user does (astral characters, CJK, a form feed, a CRLF file), then
-- has the scripted model propose a write of each file in `deferred` mode and compares each
-- proposal's oldText (the server's copy of the buffer) with the buffer's text. Prints one
-- line per file ("ok NAME" or "DIFF NAME ...") and "done".
local root, encoding = arg[1], arg[2]
local python = os.getenv("KILN_PYTHON")

local function fail(message)
  io.stdout:write("FAIL " .. message .. "\n")
  os.exit(1)
end

local client_id = vim.lsp.start({
  name = "kiln",
  cmd = { python, "-m", "lsp_server", "lsp" },
  root_dir = root,
  init_options = { index = false, editMode = "deferred" },
  capabilities = { general = { positionEncodings = { encoding } } },
  flags = { debounce_text_changes = 0 },
}, { attach = false })
if not client_id then
  fail("no client")
end
local client = assert(vim.lsp.get_client_by_id(client_id))
if not vim.wait(30000, function() return client.initialized end, 20) then
  fail("not initialized")
end
if client.offset_encoding ~= encoding then
  fail("negotiated " .. tostring(client.offset_encoding))
end

local edits = {
  ["astral.py"] = function(buf)
    vim.api.nvim_buf_set_text(buf, 2, 0, 2, #"old", { "new" })
    vim.api.nvim_buf_set_text(buf, 0, #"s = '😀", 0, #"s = '😀", { "𝔘", "" }) -- splits the line
  end,
  ["cjk.py"] = function(buf)
    vim.api.nvim_buf_set_text(buf, 0, #"名前 = '", 0, #"名前 = '値", { "価格" })
    vim.api.nvim_buf_set_lines(buf, 1, 1, false, { "追加 = 1" })
  end,
  ["formfeed.py"] = function(buf)
    vim.api.nvim_buf_set_text(buf, 1, 4, 1, 7, { "renamed" })
    vim.api.nvim_buf_set_text(buf, 0, 0, 0, 0, { "# 😀\f" })
  end,
  ["crlf.py"] = function(buf)
    vim.api.nvim_buf_set_text(buf, 1, 0, 1, 3, { "two", "three" })
    vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "end = '😀'" })
  end,
}

local buffers = {}
for name, edit in pairs(edits) do
  vim.cmd.edit(vim.fs.joinpath(root, name))
  local buf = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(buf, client_id)
  edit(buf)
  buffers[name] = buf
end

local function text_of(buf)
  local eol = vim.bo[buf].fileformat == "dos" and "\r\n" or "\n"
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  return table.concat(lines, eol) .. (vim.bo[buf].eol and eol or "")
end

local function request(method, params)
  local reply, err = client:request_sync(method, params, 60000)
  if err or not reply or reply.err then
    fail(method .. ": " .. vim.inspect(err or (reply and reply.err)))
  end
  return reply.result
end

local session = request("kiln/session/new", {})
local result = request("kiln/session/prompt", { sessionId = session.sessionId, prompt = "go" })
if result.stopReason ~= "end_turn" then
  fail("stopReason " .. tostring(result.stopReason))
end
local held = {}
for _, e in ipairs(request("kiln/edit/list", {}).edits) do
  held[e.path] = e.oldText
end
for name, buf in pairs(buffers) do
  local want = text_of(buf)
  if held[name] == want then
    io.stdout:write("ok " .. name .. "\n")
  else
    io.stdout:write("DIFF " .. name .. " " .. vim.inspect(held[name]) .. " ~= " .. vim.inspect(want) .. "\n")
  end
end
client:stop()
io.stdout:write("done\n")
os.exit(0)
