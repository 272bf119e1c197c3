"""Skills: the SKILL.md model, discovery, deferred tool schemas with tool_search, and the
registry (server, client, verified installs). A leaf library: it imports nothing from the rest
of Kiln.
"""
