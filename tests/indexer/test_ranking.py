"""Ranking signals: name matches, the symbol graph, penalties and per-file grouping."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import Index
from indexer import weights as W
from indexer.priors import file_stem, named_files
from indexer.tokens import stem, vocabulary_term

from .conftest import write


def test_exact_name_beats_incidental_mentions(repo: Path, open_index: Callable[..., Index]) -> None:
    write(repo, "a.py", "def parse_config(text):\n    return text.split()\n")
    write(
        repo,
        "b.py",
        "def load():\n    # parse the config, then parse it again; config config parse\n    return parse_config(read())\n",
    )
    idx = open_index(repo)
    idx.update()
    assert idx.search("parse_config", 2)[0].name == "parse_config"
    assert (
        idx.search("parseConfig", 2)[0].name == "parse_config"
    )  # camelCase query, snake_case code


def test_graph_brings_in_the_definition_a_hit_calls(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(
        repo,
        "shop/checkout.py",
        "def checkout_basket(basket):\n    return settle(basket, compute_vat(basket))\n",
    )
    write(repo, "shop/tax.py", "def compute_vat(amount):\n    return amount * RATE\n")
    for i in range(30):
        write(repo, f"noise/n{i}.py", f"def unrelated_{i}(x):\n    return x + {i}\n")
    idx = open_index(repo)
    idx.update()
    names = [h.name for h in idx.search("checkout basket", 5)]
    assert names[0] == "checkout_basket"
    assert "compute_vat" in names  # no lexical match: reached through the call edge


def test_camelcase_identifiers_are_split(repo: Path, open_index: Callable[..., Index]) -> None:
    write(
        repo,
        "svc.ts",
        "export function fetchUserProfile(id: string) {\n  return httpGet(`/users/${id}`);\n}\n",
    )
    idx = open_index(repo)
    idx.update()
    assert idx.search("user profile", 1)[0].name == "fetchUserProfile"


def test_tests_and_vendored_copies_rank_below_the_source(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    body = "def settle_invoice(invoice):\n    return invoice.close()\n"
    write(repo, "tests/test_billing.py", body)
    write(repo, "lib/_vendor/billing.py", body)
    write(repo, "app/billing.py", body)
    idx = open_index(repo)
    idx.update()
    paths = [h.path for h in idx.search("settle invoice", 3)]
    assert paths[0] == "app/billing.py"
    assert set(paths[1:]) == {"tests/test_billing.py", "lib/_vendor/billing.py"}


def test_one_file_does_not_flood_the_results(repo: Path, open_index: Callable[..., Index]) -> None:
    write(
        repo,
        "big.py",
        "".join(f"def widget_op_{i}(widget):\n    return widget.op{i}()\n\n\n" for i in range(8)),
    )
    write(repo, "other.py", "def helper(widget):\n    # widget\n    return widget\n")
    idx = open_index(repo)
    idx.update()
    paths = [h.path for h in idx.search("widget", 4)]
    assert paths.count("big.py") == 3 and "other.py" in paths


def test_hits_carry_text_and_metadata(repo: Path, open_index: Callable[..., Index]) -> None:
    write(
        repo,
        "pkg/geo.py",
        'def haversine(a, b):\n    """Great-circle distance."""\n    return 0.0\n',
    )
    idx = open_index(repo)
    idx.update()
    hit = idx.search("great circle distance", 1)[0]
    assert (hit.path, hit.start_line, hit.end_line, hit.kind) == ("pkg/geo.py", 1, 3, "function")
    assert hit.language == "python" and hit.signature == "def haversine(a, b)"
    assert "Great-circle" in hit.text and hit.score > 0
    assert set(hit.to_dict()) == {"path", "start_line", "end_line", "kind", "name", "score"}


def test_an_exactly_named_test_is_not_penalised(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(
        repo,
        "tests/test_headers.py",
        "def test_parse_header_folding():\n    assert parse_header('a') == 'a'\n",
    )
    write(repo, "src/headers.py", "def parse_header_folding_rules(text):\n    return text\n")
    idx = open_index(repo)
    idx.update()
    assert idx.search("test_parse_header_folding", 1)[0].path == "tests/test_headers.py"


def test_non_ascii_identifiers_are_searchable(repo: Path, open_index: Callable[..., Index]) -> None:
    write(repo, "calc.py", "def größe_berechnen(maß):\n    return maß * 2\n")
    idx = open_index(repo)
    idx.update()
    assert idx.search("größe", 1)[0].name == "größe_berechnen"


def test_packages_copied_into_a_package_count_as_vendored(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    body = "def settle_invoice(invoice):\n    return invoice.close()\n"
    write(repo, "shop/__init__.py", "")
    write(repo, "shop/packages/__init__.py", "from .billkit import billing\n")  # the shim
    write(repo, "shop/packages/billkit/__init__.py", "__version__ = '2.0'\n")
    write(repo, "shop/packages/billkit/billing.py", body)  # a copied-in library
    write(repo, "tests/test_billing.py", body)
    write(repo, "packages/web/billing.py", body)  # a monorepo's top-level packages/ folder
    idx = open_index(repo)
    idx.update()
    paths = [h.path for h in idx.search("settle invoice", 3)]
    assert paths == [
        "packages/web/billing.py",
        "tests/test_billing.py",
        "shop/packages/billkit/billing.py",
    ]


def test_words_that_spell_a_name_find_that_definition(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(
        repo,
        "serving.py",
        "class RequestHandler:\n"
        "    def log(self, kind, message):\n"
        "        print(kind, message)\n\n\n"
        "def log_startup(sock):\n"
        "    print('running on', sock)\n\n\n"
        "class Event:\n    pass\n\n\n"
        "def next_event(parser):\n    return parser.pop()\n",
    )
    idx = open_index(repo)
    idx.update()
    # a single query word naming another definition (log, event) must not win over the name
    # the words spell together
    assert idx.search("log startup", 1)[0].name == "log_startup"
    assert idx.search("next event", 1)[0].name == "next_event"
    assert idx.search("request handler", 1)[0].name == "RequestHandler"


def test_a_phrase_term_needs_no_vocabulary_lookup() -> None:
    """``snake_case`` words are phrases to FTS5 (several tokens): no vocabulary row matches
    one, so its document count is 0 without a lookup; a single word is looked up stemmed."""
    assert vocabulary_term("kiln_typed_3") is None
    assert vocabulary_term("settle refund") is None
    assert vocabulary_term("Parsing") == stem("Parsing") == "pars"


def test_a_new_snake_case_name_is_found_right_after_an_edit(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "app.py", "def handler(x):\n    y = x + 1\n    return y\n")
    idx = open_index(repo)
    idx.update()
    assert idx.search("kiln_typed_3") == []  # asked before the name exists
    idx.update_file(
        "app.py", "def handler(x):\n    kiln_typed_3 = x\n    y = x + 1\n    return y\n"
    )
    assert [h.name for h in idx.search("kiln_typed_3", 1)] == ["handler"]


def test_a_file_extension_is_not_a_name_the_query_gives(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    # A text window is named after its file ("tests/specs/comments.html"); the query's "html"
    # names the language, not that file, so the fixture keeps its test penalty.
    write(
        repo,
        "tests/specs/comments.html",
        "<html><!-- a trailing comment --><p>text</p><!-- another trailing comment --></html>\n",
    )
    write(
        repo,
        "src/html_printer.rs",
        "/// Prints a trailing comment of an html node.\n"
        "pub fn print_trailing_comment(out: &mut String, comment: &str) {\n"
        "    out.push_str(comment);\n}\n",
    )
    idx = open_index(repo)
    idx.update()
    hits = idx.search("fix(html): keep the trailing comment", 2)
    assert [h.path for h in hits] == ["src/html_printer.rs", "tests/specs/comments.html"]


def test_an_identifier_the_query_names_is_the_file_of_its_name(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    named, query = "lint/use_strict_mode.rs", "fix(useStrictMode): ignore Vue event handlers"
    # the fix is in the file the identifier names; another file says the words more often
    write(
        repo,
        named,
        "// strict mode, but not for handlers\nfn run(node: &Node) -> bool {\n    true\n}\n",
    )
    write(
        repo,
        "lint/events.rs",
        "// Vue event handlers\nfn handlers(event: &Event) -> bool {\n    event.ignore()\n}\n",
    )
    idx = open_index(repo)
    idx.update()
    assert idx.search(query, 2)[0].path == named
    monkeypatch.setattr(W, "NAMED_FILE_WEIGHT", 0.0)  # the rule is what decides it
    assert idx.search(query, 2)[0].path == "lint/events.rs"


def test_the_file_names_a_query_gives() -> None:
    assert named_files("fix rawtype warning in StandbyTask") == {"standbytask", "standby_task"}
    assert named_files("fix(useStrictMode): x") == {"usestrictmode", "use_strict_mode"}
    assert named_files("consumer: handle retriable errors") == set()  # plain words: no file
    assert file_stem("streams/src/main/java/StandbyTask.java") == "standbytask"
    # a member's owner, of one word too; the first of a chain; no number, no lone dot
    assert named_files("Fix race in Range.hashCode()") >= {"range"}
    assert named_files("add `Parser#unescape` and Foo::bar") == {"parser", "foo"}
    assert named_files("Outer.Inner.run leaks") == {"outer"}
    assert named_files("regression in 1.12, see .not() example") == set()


# the generated registry names every rule, and says the query's words more often
GENERATED_HEADER = "//! Generated file, do not edit by hand, see `xtask/codegen`\n"
RULES = (
    'pub const RULES: &[&str] = &["use_strict_mode", "no_strict_mode_handlers"];\n'
    "// strict mode handlers: strict mode event handlers\n"
)
STRICT_QUERY = "strict mode event handlers"


def _registry_and_handlers(repo: Path, open_index: Callable[..., Index], header: str) -> Index:
    write(repo, "src/rules.rs", header + RULES)
    write(
        repo,
        "src/handlers.rs",
        "/// Event handlers in strict mode.\npub fn check(node: &Node) -> bool {\n    true\n}\n",
    )
    idx = open_index(repo)
    idx.update()
    return idx


def test_a_generated_file_ranks_below_the_code_it_lists(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    idx = _registry_and_handlers(repo, open_index, GENERATED_HEADER)
    assert idx.search(STRICT_QUERY, 2)[0].path == "src/handlers.rs"
    monkeypatch.setattr(W, "GENERATED_PENALTY", 1.0)  # the rule is what decides it
    assert idx.search(STRICT_QUERY, 2)[0].path == "src/rules.rs"


def test_an_edit_that_adds_or_drops_the_generated_header_counts_at_once(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    # the answer is a flag written with the file's rows: an editor buffer that gains or loses
    # the header must change it on the next search (every write path: test_generated_flag.py)
    idx = _registry_and_handlers(repo, open_index, "")
    assert idx.search(STRICT_QUERY, 2)[0].path == "src/rules.rs"
    idx.update_file("src/rules.rs", GENERATED_HEADER + RULES)
    assert idx.search(STRICT_QUERY, 2)[0].path == "src/handlers.rs"
    idx.update_file("src/rules.rs", RULES)
    assert idx.search(STRICT_QUERY, 2)[0].path == "src/rules.rs"


def test_a_plural_or_a_verb_form_in_the_query_names_the_definition(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    # "allows" and "lists" are the words of ``allow_list`` as a subject writes them; the
    # other function says every word of the query as written
    write(repo, "glob/allow.py", "def allow_list(items):\n    return [p for p in items]\n")
    write(
        repo,
        "glob/config.py",
        "def configure(allows, lists, patterns):\n    # allows lists of patterns\n"
        "    return allows + lists + patterns\n",
    )
    idx = open_index(repo)
    idx.update()
    query = "allows lists of patterns"
    assert idx.search(query, 2)[0].name == "allow_list"
    monkeypatch.setattr(W, "STEMMED_NAMES", False)  # the words as written name nothing
    assert idx.search(query, 2)[0].name == "configure"


def test_a_test_files_module_part_named_like_the_code_stays_below_it(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    # both files' top-level parts are named after their file (``http``), which the query
    # says; the test repeats the query's words, the adapter holds the fix
    write(
        repo,
        "lib/adapters/http.js",
        "const timeout = config.timeout;\nreq.setTimeout(timeout, () => abort('timeout'));\n",
    )
    write(
        repo,
        "test/unit/adapters/http.js",
        "it('timeout error message', () => {\n  expect(error.message).toBe('timeout error');\n});\n"
        "const message = 'timeout error message for http';\n",
    )
    idx = open_index(repo)
    idx.update()
    hits = idx.search("Fix timeout error message for http", 2)
    assert [h.kind for h in hits] == ["module", "module"]
    assert hits[0].path == "lib/adapters/http.js"


def test_a_junit_method_named_by_one_word_of_the_query_stays_below_the_code(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    # JUnit's test methods need no "test" in their names: ``after`` is the query's word
    write(
        repo,
        "src/test/java/org/x/NodeTest.java",
        """
        class NodeTest {
            @Test void after() {
                Node node = parse("<p>mixed case tags</p>");
                node.after("<B>tags</B>");
            }
        }
        """,
    )
    write(
        repo,
        "src/main/java/org/x/Tokeniser.java",
        """
        class Tokeniser {
            Tag readTag(String name) {
                // tag names are lower-cased after reading, so mixed case parses alike
                return Tag.valueOf(name.toLowerCase());
            }
        }
        """,
    )
    idx = open_index(repo)
    idx.update()
    query = "parsing of mixed case tags after a rewrite"
    assert idx.search(query, 2)[0].path == "src/main/java/org/x/Tokeniser.java"
    assert idx.search("after", 1)[0].name == "NodeTest.after"  # asked for alone: the test
    monkeypatch.setattr(W, "ONE_WORD_TEST_NAMES_KEEP_PENALTY", False)  # the rule decides it
    assert idx.search(query, 2)[0].path == "src/test/java/org/x/NodeTest.java"


def test_the_owner_of_a_member_the_query_names_is_the_file_of_its_name(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    # both classes define ``hashCode``; the other one's name and comment say more of the words
    write(
        repo,
        "src/main/java/org/x/Range.java",
        "class Range {\n    public int hashCode() {\n        return min + max;\n    }\n}\n",
    )
    write(
        repo,
        "src/main/java/org/x/ThreadSafeRange.java",
        """
        class ThreadSafeRange {
            // the hash code of a range shared between threads
            public int hashCode() {
                return start + end;
            }
        }
        """,
    )
    idx = open_index(repo)
    idx.update()
    query = "Fix thread safety of Range.hashCode()"
    assert idx.search(query, 2)[0].path == "src/main/java/org/x/Range.java"
    monkeypatch.setattr(W, "MEMBER_OWNER_NAMES_FILE", False)  # the rule decides it
    assert idx.search(query, 2)[0].path == "src/main/java/org/x/ThreadSafeRange.java"
