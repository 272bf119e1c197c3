from lsp_server.cli import main

main()
