"""`kiln acp`: the Agent Client Protocol front-end (stdio JSON-RPC) over the shared session core.

``server.run_stdio()`` is the entry point; ``frontend`` moves the core's updates, permission
questions and file reads/writes over the wire. Importing this package starts nothing.
"""
