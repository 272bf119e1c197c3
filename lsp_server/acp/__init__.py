"""`kiln acp`: the Agent Client Protocol front-end (stdio JSON-RPC) over the shared session core.

``process.run_stdio()`` is the entry point; ``server`` answers the ACP methods; ``frontend``
moves the core's updates, permission questions and file reads/writes over the wire. Importing
this package starts nothing.
"""
