"""The embedded model at its edges, through the real `kiln run` and the real llama.cpp: a model
file that is not a GGUF or is cut short, the reply cut at the model's own output limit, the
threads it may use, and a first message larger than its window (memory, skills, the goal)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.providers import local_available
from agent.types import user_message
from tests.providers.helpers import collect, make_request

ROOT = Path(__file__).resolve().parents[2]
needs_local = pytest.mark.skipif(
    not local_available(),
    reason="the local extra is not installed: pip install 'kiln-agent[local]'",
)


def kiln_run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    full = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    full.update(KILN_HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT), KILN_PROVIDER="local")
    full.update(env)
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--mode", "yolo", "--max-steps", "1", *args],
        cwd=workspace, env=full, capture_output=True, text=True, timeout=900,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@needs_local
def test_a_file_that_is_not_a_gguf_is_one_line_before_any_session(tmp_path: Path) -> None:
    junk = tmp_path / "model.gguf"
    junk.write_bytes(b"<html>404 Not Found</html>" * 100)  # a download that went wrong
    proc = kiln_run(tmp_path, "What does calc.py do?", KILN_LOCAL_GGUF=str(junk))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert str(junk) in lines[0] and "not a GGUF" in lines[0] and "KILN_LOCAL_GGUF" in lines[0]
    missing = kiln_run(tmp_path, "hi", KILN_LOCAL_GGUF=str(tmp_path / "nope.gguf"))
    assert missing.returncode == 2 and "KILN_LOCAL_GGUF" in missing.stderr, missing.stderr
    assert "pip install" not in missing.stderr  # reinstalling would not make that path exist


@needs_local
def test_a_gguf_cut_short_names_the_file_not_the_conversation(tmp_path: Path) -> None:
    from agent.providers.local import find_gguf

    cut = tmp_path / "cut.gguf"
    cut.write_bytes(find_gguf().read_bytes()[:1_000_000])  # an interrupted copy
    proc = kiln_run(tmp_path, "What does calc.py do?", KILN_LOCAL_GGUF=str(cut))
    errors = [ln for ln in proc.stderr.splitlines() if str(cut) in ln]
    assert proc.returncode == 4 and len(errors) == 1, proc.stderr
    # before: "(shorten the conversation or use a larger model)"
    assert "shorten" not in proc.stderr and "KILN_LOCAL_GGUF" in errors[0], proc.stderr


@pytest.mark.local_model
@pytest.mark.slow
@needs_local
def test_the_cut_off_note_names_the_models_own_output_limit(tmp_path: Path) -> None:
    proc = kiln_run(tmp_path, "What does calc.py do?", KILN_LOCAL_MAX_TOKENS="4")
    assert proc.returncode == 0, proc.stderr
    # before: "stopped at the output limit (8192 tokens)", the session's figure, not the model's
    assert "stopped at the output limit (4 tokens)" in proc.stderr, proc.stderr
    assert "tokens in" in proc.stderr and "out 4;" in proc.stderr
    # four tokens are `{ "tool":`: before, that JSON was printed as the answer
    assert "{" not in proc.stdout and '"tool"' not in proc.stdout, proc.stdout
    assert "a tool call was cut before its name was complete" in proc.stderr, proc.stderr


@needs_local
def test_threads_follow_the_cores_this_process_may_use(tmp_path: Path) -> None:
    """llama-cpp-python evaluates prompts on every core of the machine (n_threads_batch) unless
    told otherwise, and counts the machine's cores, not those the process may run on."""
    code = (
        "import os; os.sched_setaffinity(0, {0})\n"
        "from agent.providers.local import LocalModel\n"
        "m = LocalModel(); p = m._llama().llama.context_params\n"
        "print(p.n_threads, p.n_threads_batch)\n"
        "os.environ['KILN_LOCAL_THREADS'] = '3'\n"
        "p = LocalModel()._llama().llama.context_params\n"
        "print(p.n_threads, p.n_threads_batch)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.stdout.split() == ["1", "1", "3", "3"], proc.stderr


@pytest.mark.local_model
@pytest.mark.slow
@needs_local
async def test_a_first_message_over_the_window_keeps_the_goal() -> None:
    """Memory, the skill catalog and the environment ride in the first user message, the goal
    last. Before, a message over the window was cut to its head: the goal went, and the model
    answered the memory file."""
    from agent.providers.local import LocalModel

    model = LocalModel(n_ctx=512, max_tokens=4)
    memory = "\n".join(f"- rule {i}: format widget {i} with care" for i in range(600))
    goal = "GOAL-7f3a: say what calc.py does."
    request = make_request(user_message(f"<memory>\n{memory}\n</memory>\n\n{goal}"))
    reply = (await collect(model.stream(request)))[-1]
    assert 0 < reply.usage.total_input <= 512 - 4
    llama = model._llama().llama
    seen = llama.detokenize(llama._input_ids.tolist()).decode("utf-8", "replace")
    assert "GOAL-7f3a" in seen and "rule 0:" in seen and "cut to fit" in seen


@needs_local
def test_a_model_name_the_embedded_provider_cannot_run_is_refused(tmp_path: Path) -> None:
    """Before, `--model gpt-4o` with the local provider was silently ignored: the 135M model
    answered as if it were the model asked for."""
    proc = kiln_run(tmp_path, "--model", "gpt-4o", "hi")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "gpt-4o" in lines[0], proc.stderr
    assert "smollm2-135m-instruct" in lines[0] and ".gguf" in lines[0]
    junk = tmp_path / "other.gguf"
    junk.write_bytes(b"not a model")
    proc = kiln_run(tmp_path, "--model", str(junk), "hi")  # a GGUF path is the model to run
    assert proc.returncode == 2 and f"{junk} is not a GGUF" in proc.stderr, proc.stderr


@pytest.mark.local_model
@pytest.mark.slow
@needs_local
def test_a_reply_cut_at_the_limit_is_not_shown_as_raw_json(tmp_path: Path) -> None:
    """The grammar makes every reply one JSON object; cut at the output limit it does not parse.
    Before, the JSON text itself (`{ "tool": "todo_write", "arguments": { "items`) was printed
    as the answer and the turn ended `[ok]`; now a cut call is a call whose arguments the tool
    runner reports as incomplete, and a cut answer is its text."""
    proc = kiln_run(
        tmp_path, "Write a short poem about the sea. Do not use any tool.",
        KILN_LOCAL_MAX_TOKENS="16",
    )  # fmt: skip
    assert proc.returncode in (0, 3), proc.stderr  # 3: the step limit, after the cut call
    assert '"tool"' not in proc.stdout and '"answer"' not in proc.stdout, proc.stdout
    assert "stopped at the output limit (16 tokens)" in proc.stderr, proc.stderr


def test_a_cut_answer_is_its_text_and_a_cut_call_keeps_its_arguments_raw() -> None:
    from agent.providers.local_format import parse_reply
    from agent.types import INVALID_JSON

    blocks, stop = parse_reply('{"answer": "The sea is \\"deep\\" and \\u00e', "c1")
    assert stop == "max_tokens" and blocks == [{"type": "text", "text": 'The sea is "deep" and '}]
    blocks, _ = parse_reply('{ "tool": "read_file", "arguments": { "path": "ca', "c2")
    assert blocks == [{"type": "tool_use", "id": "c2", "name": "read_file",
                       "input": {INVALID_JSON: '{ "path": "ca'}}]  # fmt: skip


def test_a_reply_cut_before_a_calls_name_is_neither_shown_nor_run() -> None:
    """Cut before the tool's name was complete (`{ "tool":`, `{ "tool": "read_f`) or before the
    reply said anything (`{`), the grammar's JSON was kept as the answer's text and printed."""
    from agent.providers.local_format import CUT_AT_START, CUT_IN_NAME, cut_short, parse_reply

    whole = '{ "tool": "read_file", "arguments": { "path": "calc.py" } }'
    for end in range(whole.index('"tool"') + 2, whole.index('"arguments"')):
        raw = whole[:end]
        assert parse_reply(raw, "c") == ([], "max_tokens") and cut_short(raw) == CUT_IN_NAME, raw
    for raw in ("{", '{ "', '{"answer":', '{ "ans'):
        assert parse_reply(raw, "c") == ([], "max_tokens") and cut_short(raw) == CUT_AT_START, raw
    assert cut_short('{ "answer": "The sea') == "" and cut_short(whole[:-5]) == ""


@needs_local
@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"KILN_LOCAL_MAX_TOKENS": "8192"}, "KILN_LOCAL_MAX_TOKENS"),  # the whole window
        ({"KILN_LOCAL_MAX_TOKENS": "lots"}, "KILN_LOCAL_MAX_TOKENS"),
        ({"KILN_LOCAL_THREADS": "0"}, "KILN_LOCAL_THREADS"),
    ],
)
def test_local_settings_out_of_range_are_one_line(
    tmp_path: Path, env: dict[str, str], words: str
) -> None:
    """Before the check, an output limit as large as the window left no room for the prompt:
    every message was cut to nothing and llama.cpp's refusal came back as "shorten the
    conversation", after the model had loaded."""
    proc = kiln_run(tmp_path, "hi", **env)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and words in lines[0], proc.stderr


@needs_local
def test_a_gguf_path_with_a_tilde_is_the_home_folder(tmp_path: Path) -> None:
    """Editors pass their settings' environment unexpanded (VS Code's `env`, a systemd unit):
    before, `KILN_LOCAL_GGUF=~/models/x.gguf` was "model file not found: ~/models/x.gguf"."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "x.gguf").write_bytes(b"not a model")
    proc = kiln_run(tmp_path, "hi", KILN_LOCAL_GGUF="~/models/x.gguf", HOME=str(tmp_path))
    assert proc.returncode == 2 and f"{tmp_path}/models/x.gguf is not a GGUF" in proc.stderr, (
        proc.stderr
    )
