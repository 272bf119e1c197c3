"""The harness: the agent loop, context assembly, providers, tools, status bar, compaction,
memory, sessions and permissions. It uses the two leaf libraries (`indexer`,
`skills_registry`) and never learns which editor or CI system hosts it. ``Session`` is a small
coordinator over typed parts; ``agent/README.md`` says in one line what each file owns.
"""
