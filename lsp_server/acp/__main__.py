"""`python -m lsp_server.acp`: the same server as `kiln acp`, for clients configured with a module."""

from lsp_server.acp.process import run_stdio

if __name__ == "__main__":
    run_stdio()
