"""The code index: tree-sitter chunking into blocks, a SQLite store, ranking and file watching.

A leaf library: it imports nothing from the rest of Kiln.
"""
