"""Block shapes: skeletons, attached decorators/docstrings, split bodies, merged siblings."""

from __future__ import annotations

import textwrap

from indexer.blocks import MAX_BLOCK_LINES
from indexer.chunker import chunk_file


def blocks_of(path: str, source: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for b in chunk_file(path, textwrap.dedent(source).lstrip("\n").encode()):
        out.setdefault(b.name, []).append(b)
    return out


PY = '''
"""Billing module."""
import os
from decimal import Decimal

RATE = Decimal("0.2")


# Applies a discount before tax.
@cached
@traced(level=2)
def discounted(price, pct):
    """Price after a percentage discount."""
    return price * (1 - pct)


class Ledger(Base):
    """Double-entry ledger."""

    currency: str = "EUR"

    def post(self, entry):
        """Post one entry."""
        self.entries.append(validate(entry))
        return len(self.entries)

    def a(self): return 1
    def b(self): return 2
    def c(self): return 3
'''


def test_decorators_comments_and_docstring_are_attached() -> None:
    fn = blocks_of("billing.py", PY)["discounted"][0]
    assert fn.kind == "function"
    assert fn.text.startswith(
        "# Applies a discount before tax.\n@cached\n@traced(level=2)\ndef discounted"
    )
    assert fn.docstring == "Price after a percentage discount."
    assert fn.signature == "def discounted(price, pct)"
    assert (fn.start_line, fn.end_line) == (8, 13)


def test_class_skeleton_collapses_method_bodies() -> None:
    cls = blocks_of("billing.py", PY)["Ledger"][0]
    assert cls.kind == "class"
    assert cls.docstring == "Double-entry ledger."
    assert 'currency: str = "EUR"' in cls.text
    assert "def post(self, entry): ..." in cls.text
    assert "validate(entry)" not in cls.text  # bodies are collapsed
    assert "Base" in cls.refs


def test_methods_are_qualified_and_reference_their_callees() -> None:
    post = blocks_of("billing.py", PY)["Ledger.post"][0]
    assert post.kind == "method"
    assert post.docstring == "Post one entry."
    assert {"validate", "append", "len"} <= post.refs


def test_tiny_siblings_are_merged() -> None:
    merged = blocks_of("billing.py", PY)["Ledger.a, Ledger.b, Ledger.c"][0]
    assert merged.kind == "method"
    assert merged.defines == ["a", "b", "c"]
    assert merged.text.count("def ") == 3


def test_module_preamble_holds_imports_and_constants() -> None:
    pre = blocks_of("pkg/billing.py", PY)["pkg.billing"][0]
    assert pre.kind == "module"
    assert pre.docstring == "Billing module."
    assert "import os" in pre.text and 'RATE = Decimal("0.2")' in pre.text
    assert "def " not in pre.text


def test_oversized_body_is_split_at_statements_with_signature_repeated() -> None:
    body = "\n".join(f"    value_{i} = step_{i}(value_{i - 1})" for i in range(1, 400))
    source = f"def pipeline(value_0):\n{body}\n    return value_399\n"
    parts = chunk_file("big.py", source.encode())
    assert len(parts) >= 3 and all(p.name == "pipeline" for p in parts)
    for part in parts:
        assert part.text.startswith("def pipeline(value_0):")
        assert part.lines <= MAX_BLOCK_LINES + 1
    # The parts tile the function: consecutive, no statement lost or duplicated.
    assert parts[0].start_line == 1 and parts[-1].end_line == 401
    for prev, nxt in zip(parts, parts[1:], strict=False):
        assert nxt.start_line == prev.end_line + 1
    joined = "\n".join(p.text.split("\n", 1)[1] for p in parts)
    assert joined.count("value_") == source.count("value_") - 1


def test_brace_language_skeleton_and_doc_comment() -> None:
    java = """
    /** Holds accounts. */
    public class Bank {
        private int count;

        /** Opens an account. */
        public Account open(String owner) {
            count++;
            return new Account(owner);
        }
    }
    """
    b = blocks_of("Bank.java", java)
    assert "public Account open(String owner) { ... }" in b["Bank"][0].text
    assert b["Bank"][0].docstring == "Holds accounts."
    assert b["Bank.open"][0].docstring == "Opens an account."
    assert "Account" in b["Bank.open"][0].refs


def test_a_java_enum_constants_body_owns_its_methods() -> None:
    # a state machine as an enum: each constant overrides ``process``; the constant is the
    # name a fix subject gives ("a stack overflow in InTable"), not the method
    java = """
    enum TreeBuilderState {
        InTable {
            boolean process(Token t, TreeBuilder tb) {
                if (t.isCharacter()) { tb.insert(t); return true; }
                return anythingElse(t, tb);
            }
            boolean anythingElse(Token t, TreeBuilder tb) {
                return tb.process(t, InBody);
            }
        },
        Plain;
        abstract boolean process(Token t, TreeBuilder tb);
    }
    """
    b = blocks_of("TreeBuilderState.java", java)
    assert b["TreeBuilderState.InTable.process"][0].kind == "method"
    assert b["TreeBuilderState.InTable.anythingElse"][0].kind == "method"
    assert b["TreeBuilderState.InTable"][0].kind == "class"
    assert b["TreeBuilderState.process"][0].kind == "method"  # the enum's own, abstract


def test_text_files_fall_back_to_line_windows() -> None:
    text = "\n".join(f"line {i}" for i in range(150))
    windows = chunk_file("notes/big.txt", text.encode())
    assert [w.kind for w in windows] == ["text"] * 3
    assert [(w.start_line, w.end_line) for w in windows] == [(1, 60), (61, 120), (121, 150)]


def test_block_hash_changes_with_content() -> None:
    a = chunk_file("x.py", b"def f():\n    return 1\n")[0]
    b = chunk_file("x.py", b"def f():\n    return 2\n")[0]
    assert a.hash != b.hash and len(a.hash) == 16


def test_long_class_skeleton_is_cut_into_parts_with_the_header_repeated() -> None:
    methods = "".join(
        f"    def method_{i}(self, value):\n        return value + {i}\n\n" for i in range(200)
    )
    source = f'class Huge(Base):\n    """Many methods."""\n\n{methods}'
    skeletons = [b for b in chunk_file("huge.py", source.encode()) if b.kind == "class"]
    assert len(skeletons) >= 2 and all(b.name == "Huge" for b in skeletons)
    assert skeletons[0].text.startswith("class Huge(Base):")
    for part in skeletons[1:]:
        assert part.text.startswith("class Huge(Base):\n")
        assert part.lines > 1
    for prev, nxt in zip(skeletons, skeletons[1:], strict=False):
        assert nxt.start_line > prev.end_line
    assert skeletons[-1].end_line == source.rstrip("\n").count("\n") + 1
    # every method signature is in exactly one part, on the line its definition starts
    last = skeletons[-1]
    assert "def method_199(self, value): ..." in last.text
    assert sum(b.text.count("def method_") for b in skeletons) == 200
    src_lines = source.split("\n")
    for part in skeletons[1:]:  # line numbers map back to the original file
        body = part.text.split("\n")[1:]
        assert all(
            src_lines[part.start_line - 1 + j].startswith(ln.removesuffix(" ..."))
            for j, ln in enumerate(body[:1])
        )


def test_preamble_parts_have_exact_spans() -> None:
    source = "import os\n\n\ndef a():\n    return 1\n\n\nLIMIT = 10\n\n\ndef b():\n    return 2\n\n\nif __name__ == '__main__':\n    a()\n"
    modules = [
        (m.start_line, m.end_line)
        for m in chunk_file("s.py", source.encode())
        if m.kind == "module"
    ]
    assert modules == [(1, 1), (8, 8), (15, 16)]
