"""The skills registry server: storage seams and their SQLite/blob defaults, publish checks
(archive safety, spec validation, scan), ed25519 release signing, the starlette API and the
generated marketplace.json. Importing this package loads nothing heavy; ``app`` pulls in
starlette only when a server is built.
"""
