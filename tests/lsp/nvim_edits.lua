-- Neovim's own LSP client (no Kiln plugin) applying the `workspace/applyEdit`s of `kiln lsp`,
-- for tests/lsp/test_nvim_edits_e2e.py. Usage: nvim --headless --clean -l nvim_edits.lua ROOT
-- ENCODING. Opens every file of ROOT that is listed in ROOT/expected.json, runs one turn in
-- which the scripted model edits each of them, and compares each buffer with the text expected.
-- Prints one line per file ("ok NAME" or "DIFF NAME ...") and "done".
local root, encoding = arg[1], arg[2]
local common = dofile(vim.fs.joinpath(vim.fs.dirname(arg[0]), "nvim_common.lua"))
local fail, text_of = common.fail, common.text_of

local expected = vim.json.decode(table.concat(vim.fn.readfile(vim.fs.joinpath(root, "expected.json")), "\n"))
local client, client_id = common.start(root, encoding, { index = false, mode = "yolo", editMode = "auto" })

local buffers = {}
for name, _ in pairs(expected) do
  vim.cmd.edit(vim.fs.joinpath(root, name))
  local buf = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(buf, client_id)
  buffers[name] = buf
end

local session = common.request(client, "kiln/session/new", {})
local result = common.request(client, "kiln/session/prompt", { sessionId = session.sessionId, prompt = "go" })
if result.stopReason ~= "end_turn" then
  fail("stopReason " .. tostring(result.stopReason))
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
