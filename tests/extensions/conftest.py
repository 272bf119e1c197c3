"""Fixtures shared with the LSP end-to-end tests (a workspace, a scripted-model environment)."""

from tests.lsp.conftest import scripted_env, workspace  # noqa: F401 - re-exported fixtures
