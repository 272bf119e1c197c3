-- Neovim's own LSP client (no Kiln plugin) applying the `workspace/applyEdit`s of `kiln lsp`,
-- for tests/lsp/test_nvim_edits_e2e.py. Usage: nvim --headless --clean -l nvim_edits.lua ROOT
-- ENCODING. Opens every file of ROOT that is listed in ROOT/expected.json, runs one turn in
-- which the scripted model edits each of them, and compares each buffer with the text expected.
-- Prints one line per file ("ok NAME" or "DIFF NAME ...") and "done".
local root, encoding = arg[1], arg[2]
local python = os.getenv("KILN_PYTHON")

local function fail(message)
  io.stdout:write("FAIL " .. message .. "\n")
  os.exit(1)
end

local expected = vim.json.decode(table.concat(vim.fn.readfile(vim.fs.joinpath(root, "expected.json")), "\n"))
local client_id = vim.lsp.start({
  name = "kiln",
  cmd = { python, "-m", "lsp_server", "lsp" },
  root_dir = root,
  init_options = { index = false, mode = "yolo", editMode = "auto" },
  capabilities = { general = { positionEncodings = { encoding } } },
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

local buffers = {}
for name, _ in pairs(expected) do
  vim.cmd.edit(vim.fs.joinpath(root, name))
  local buf = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(buf, client_id)
  buffers[name] = buf
end

local function text_of(buf)
  local eol = vim.bo[buf].fileformat == "dos" and "\r\n" or "\n"
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  return table.concat(lines, eol) .. (vim.bo[buf].eol and eol or "")
end

local session, err = client:request_sync("kiln/session/new", {}, 60000)
if err or not session or session.err then
  fail("session/new " .. vim.inspect(err or session))
end
local reply = client:request_sync(
  "kiln/session/prompt", { sessionId = session.result.sessionId, prompt = "go" }, 120000
)
if not reply or reply.err or reply.result.stopReason ~= "end_turn" then
  fail("prompt " .. vim.inspect(reply))
end
for name, buf in pairs(buffers) do
  local got = text_of(buf)
  if got == expected[name] then
    io.stdout:write("ok " .. name .. "\n")
  else
    io.stdout:write("DIFF " .. name .. " " .. vim.inspect(got) .. " ~= " .. vim.inspect(expected[name]) .. "\n")
  end
end
client:stop()
io.stdout:write("done\n")
os.exit(0)
