"""The host: the pygls language server, the ACP server, the headless runner and the `kiln` CLI.

Everything editor- or CI-specific lives here; `agent` never learns an editor exists.
"""
