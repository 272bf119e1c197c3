-- Neovim's own LSP client (no Kiln plugin) syncing buffers to `kiln lsp`, for
-- tests/lsp/test_nvim_sync_e2e.py. Usage: nvim --headless --clean -l nvim_sync.lua ROOT ENCODING
-- Edits buffers the way a user does (astral characters, CJK, a form feed, a CRLF file), then
-- has the scripted model propose a write of each file in `deferred` mode and compares each
-- proposal's oldText (the server's copy of the buffer) with the buffer's text. Prints one
-- line per file ("ok NAME" or "DIFF NAME ...") and "done".
local root, encoding = arg[1], arg[2]
local common = dofile(vim.fs.joinpath(vim.fs.dirname(arg[0]), "nvim_common.lua"))
local fail, text_of = common.fail, common.text_of
local client, client_id = common.start(
  root, encoding, { index = false, editMode = "deferred" }, { debounce_text_changes = 0 }
)

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

local function request(method, params)
  return common.request(client, method, params)
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
