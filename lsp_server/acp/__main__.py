"""`python -m lsp_server.acp`: the same server as `kiln acp`, for clients configured with a module
(its arguments read as `kiln acp` reads them: `--help`, and one line and exit 2 for others)."""

import sys

from lsp_server.cli import main

if __name__ == "__main__":
    sys.exit(main(["acp", *sys.argv[1:]]))
