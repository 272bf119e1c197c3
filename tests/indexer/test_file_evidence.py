"""A file ranks by its best block, raised by its next two (``file_evidence``): a module where
several functions speak to the query comes before one small block elsewhere that says the
words a little better."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import Index
from indexer import weights as W

from .conftest import write

QUERY = "retry after a connection timeout"


def _client_and_helper(repo: Path, open_index: Callable[..., Index]) -> Index:
    write(
        repo,
        "helpers.py",
        '''
        def backoff_seconds(attempt):
            """Seconds to wait before a retry after a connection timeout."""
            return min(2 ** attempt, 30)
        ''',
    )
    write(
        repo,
        "client.py",
        '''
        class Client:
            def send(self, request):
                """Send the request; on a connection timeout, retry."""
                for attempt in range(self.retries):
                    try:
                        return self._transport.send(request, timeout=self.timeout)
                    except TimeoutError:
                        continue

            def open_channel(self, host):
                """Open the connection, with the timeout of the client."""
                return self._transport.open(host, timeout=self.timeout)

            def close_idle(self):
                """Close a connection idle past its timeout, so a retry opens a new one."""
                for conn in self._pool:
                    if conn.idle > self.timeout:
                        conn.close()
        ''',
    )
    idx = open_index(repo)
    idx.update()
    return idx


def test_a_module_whose_functions_speak_to_the_query_comes_first(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    idx = _client_and_helper(repo, open_index)
    hits = idx.search(QUERY, 6)
    assert [h.path for h in hits] == ["client.py", "helpers.py", "client.py", "client.py"]
    # the module's own blocks keep their order: only its best one was raised
    assert [h.name for h in hits if h.path == "client.py"] == [
        "Client.send",
        "Client.close_idle",
        "Client.open_channel",
    ]
    assert hits[0].score > hits[1].score > hits[2].score
    monkeypatch.setattr(W, "FILE_NEXT_BLOCKS_WEIGHT", 0.0)  # the rule is what decides it
    assert [h.path for h in idx.search(QUERY, 6)][:2] == ["helpers.py", "client.py"]


def test_a_file_of_one_block_is_not_raised(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    idx = _client_and_helper(repo, open_index)
    raised = {h.name: h.score for h in idx.search(QUERY, 6)}
    monkeypatch.setattr(W, "FILE_NEXT_BLOCKS_WEIGHT", 0.0)
    plain = {h.name: h.score for h in idx.search(QUERY, 6)}
    assert raised["backoff_seconds"] == plain["backoff_seconds"]
    assert raised["Client.close_idle"] == plain["Client.close_idle"]  # not a file's best
    assert raised["Client.send"] > plain["Client.send"]


def test_a_one_word_query_ranks_blocks_alone(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    # one word is an editor's search for a name just typed: no file's blocks lift it
    idx = _client_and_helper(repo, open_index)
    raised = [(h.path, h.name, h.score) for h in idx.search("timeout", 6)]
    monkeypatch.setattr(W, "FILE_NEXT_BLOCKS_WEIGHT", 0.0)
    assert [(h.path, h.name, h.score) for h in idx.search("timeout", 6)] == raised
    assert len({path for path, _, _ in raised}) == 2  # both files hold the word
    assert [path for path, _, _ in raised].count("client.py") >= 2  # which has blocks to give
