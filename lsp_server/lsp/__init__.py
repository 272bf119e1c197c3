"""`kiln lsp`: the language server that hosts the agent (see ``lsp_server/PROTOCOL.md``)."""
