"""Headless runs: `kiln run` in a terminal or a pipeline, and the CI extras (verify, patch,
branch commit, Markdown summary, GitHub event payloads)."""
