"""Tree structure as ranking evidence: the component a query names, tooling files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import Index
from indexer import weights as W
from indexer.paths import is_example_path
from indexer.structure import folder_holds, is_tooling_path, scope_parts, scope_words
from indexer.subjects import subject_of_test

from .conftest import write


@pytest.mark.parametrize(
    ("query", "scope"),
    [
        ("ignore: fix handling of ** in globs", {"ignore"}),
        ("grep-printer: fix truncated lines", {"grep", "printer"}),
        ("fix(fetch): treat TypeError as a network error", {"fetch"}),
        ("fix(core/axios)!: handle a read-only stack", {"core", "axios"}),
        ("[globset] Fix recursive suffix matching", {"globset"}),
        ("Fix: don't add null values", set()),  # a kind of change, not a place
        ("feat: add a flag", set()),
        ("fix the parser: it drops the last byte", set()),  # a colon later is no prefix
        ("-- allow lists in the config", set()),
    ],
)
def test_the_component_a_query_names_first(query: str, scope: set[str]) -> None:
    assert scope_words(query) == scope


def _two_crates(repo: Path) -> None:
    write(
        repo,
        "crates/printer/src/summary.rs",
        "pub fn write_summary(out: &mut Vec<u8>, line: &[u8]) {\n"
        "    // a line terminator ends the summary line\n"
        "    out.extend_from_slice(line);\n}\n",
    )
    write(
        repo,
        "crates/searcher/src/lines.rs",
        "pub fn terminator_of(terminator: u8) -> u8 {\n"
        "    // line terminator handling\n"
        "    terminator\n}\n",
    )


def test_a_named_crate_outranks_a_better_word_match_elsewhere(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    _two_crates(repo)
    idx = open_index(repo)
    idx.update()
    # without a component, the block that says the words most wins ...
    assert idx.search("fix line terminator handling", 2)[0].path == "crates/searcher/src/lines.rs"
    # ... with one, the crate it names does
    hits = idx.search("printer: fix line terminator handling", 2)
    assert hits[0].path == "crates/printer/src/summary.rs"


@pytest.mark.parametrize(
    ("query", "path", "holds"),
    [
        ("fix(css_formatter): x", "crates/biome_css_formatter/src/lib.rs", True),
        ("fix(css_formatter): x", "crates/biome_css_parser/src/lib.rs", False),
        ("fix(css_formatter): x", "crates/biome_js_formatter/src/css.rs", False),
        ("fix(format/html): x", "crates/biome_html_formatter/src/a.rs", True),
        ("fix(parser/yaml): x", "crates/biome_yaml_parser/src/lexer/mod.rs", True),
        ("fix(js/parser): x", "crates/biome_json_parser/src/lib.rs", False),  # js is not json
        ("fix(css_formatter): x", "crates/css/formatter.rs", False),  # two folders, or a file
    ],
)
def test_a_folder_holding_every_word_of_the_component(query: str, path: str, holds: bool) -> None:
    assert folder_holds(scope_parts(query), path) is holds


def test_the_crate_a_component_names_in_two_words_outranks_its_siblings(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    body = "pub fn format_comment(comment: &str) -> String {{\n    // {}\n    comment.trim().into()\n}}\n"
    # the sibling crates say the query's words; each has one word of the component in a folder
    write(
        repo,
        "crates/biome_css_parser/src/comments.rs",
        body.format("keep selector comments inline, selector comments"),
    )
    write(
        repo,
        "crates/biome_js_formatter/src/comments.rs",
        body.format("keep selector comments inline, inline comments"),
    )
    write(repo, "crates/biome_css_formatter/src/comments.rs", body.format("the comment"))
    idx = open_index(repo)
    idx.update()
    monkeypatch.setattr(W, "SCOPE_FILE_CANDIDATES", 0)  # the prior alone (test_scoped.py)
    query = "fix(format/css): keep selector comments inline"
    assert idx.search(query, 3)[0].path == "crates/biome_css_formatter/src/comments.rs"
    monkeypatch.setattr(W, "SCOPE_FOLDER_WEIGHT", 0.0)  # the rule is what decides it
    assert idx.search(query, 3)[0].path != "crates/biome_css_formatter/src/comments.rs"


def test_declarations_and_build_configs_rank_below_the_code(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(
        repo,
        "index.d.ts",
        "/** Merge common headers with extra headers: common headers first. */\n"
        "export function combine(common: Headers, extra: Headers): Headers;\n",
    )
    write(
        repo,
        "rollup.config.js",
        "// merge common headers into every bundle, common headers first\n"
        "export default { banner: combine(commonHeaders, {}) };\n",
    )
    write(
        repo,
        "lib/core/headers.js",
        "// merge common headers with the extra ones\n"
        "export function combine(common, extra) {\n  return {...common, ...extra};\n}\n",
    )
    idx = open_index(repo)
    idx.update()
    paths = [h.path for h in idx.search("merge common headers", 3)]
    assert paths[0] == "lib/core/headers.js"
    assert set(paths[1:]) == {"index.d.ts", "rollup.config.js"}


@pytest.mark.parametrize(
    ("path", "tooling"),
    [
        ("index.d.ts", True),
        ("types/index.d.cts", True),
        ("webpack.config.js", True),
        ("karma.conf.cjs", True),
        ("build.rs", True),
        ("crates/core/build.rs", True),
        ("Gulpfile.js", True),
        ("lib/config.js", False),
        ("src/builder.rs", False),
        ("lib/adapters/http.ts", False),
    ],
)
def test_tooling_paths(path: str, tooling: bool) -> None:
    assert is_tooling_path(path) is tooling


def test_a_named_test_brings_in_the_code_it_tests(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(
        repo,
        "appender/src/main/java/org/acme/log/KafkaAppender.java",
        "package org.acme.log;\n\npublic class KafkaAppender {\n"
        "    private Sender sender;\n\n"
        "    public void close() {\n        sender = null;\n    }\n}\n",
    )
    write(
        repo,
        "appender/src/test/java/org/acme/log/KafkaAppenderTest.java",
        "package org.acme.log;\n\npublic class KafkaAppenderTest {\n"
        "    @Test\n    public void testProducerLeaks() {\n"
        "        KafkaAppender appender = new KafkaAppender();\n        appender.close();\n    }\n}\n",
    )
    for i in range(12):  # other code that says "producer" more than the appender does
        write(
            repo,
            f"clients/src/main/java/org/acme/clients/Producer{i}.java",
            f"package org.acme.clients;\n\npublic class Producer{i} {{\n"
            "    // a producer leaks buffers when the producer is not closed\n"
            "    public void send() {}\n}\n",
        )
    idx = open_index(repo)
    idx.update()
    paths = [h.path for h in idx.search("Fix producer leaks in KafkaAppenderTest", 5)]
    assert set(paths[:2]) == {
        "appender/src/main/java/org/acme/log/KafkaAppender.java",
        "appender/src/test/java/org/acme/log/KafkaAppenderTest.java",
    }


@pytest.mark.parametrize(
    ("path", "subject"),
    [
        ("core/src/test/java/org/a/LogManagerTest.java", "LogManager"),
        ("core/src/test/java/org/a/LogManagerIT.java", "LogManager"),
        ("core/src/test/java/org/a/TestLogManager.java", "LogManager"),
        ("pkg/router/tree_test.go", "tree"),
        ("tests/test_decoders.py", "decoders"),
        ("lib/core/buildURL.spec.ts", "buildURL"),
        ("test/unit/headers.test.js", "headers"),
        ("lib/core/Axios.js", None),
        ("src/testing.rs", None),
    ],
)
def test_what_a_test_file_is_named_after(path: str, subject: str | None) -> None:
    assert subject_of_test(path) == subject


def test_a_tracker_key_is_not_searched_for_in_the_code(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(
        repo,
        "streams/src/main/java/org/acme/TaskManager.java",
        "public class TaskManager {\n"
        "    public void handleTasks(StateUpdater updater) {\n"
        "        updater.drainTasks();\n    }\n}\n",
    )
    write(  # mentions the ticket's digits, nothing else of the query
        repo,
        "clients/src/main/java/org/acme/Versions.java",
        "public class Versions {\n    // 16508: raised the limit\n    int limit = 16508;\n}\n",
    )
    idx = open_index(repo)
    idx.update()
    hits = idx.search("KAFKA-16508: handle tasks in the state updater", 5)
    assert {h.path for h in hits} == {"streams/src/main/java/org/acme/TaskManager.java"}
    # a query that is only a key still finds where the key is written
    assert idx.search("KAFKA-16508", 1)[0].path == "clients/src/main/java/org/acme/Versions.java"


def test_with_the_switch_on_fix_and_bug_are_not_searched_for_in_the_code(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(W, "CHANGE_WORDS_OUT", True)  # off by default: see weights.py
    write(
        repo,
        "streams/src/main/java/org/acme/ProcessorNode.java",
        "public class ProcessorNode {\n    public void process(Record record) {\n"
        "        // a null key used to crash the processor\n"
        "        if (record.key() == null) return;\n        child.process(record);\n    }\n}\n",
    )
    write(  # "Fixed" stems to "fix": without the rule this interface wins
        repo,
        "streams/src/main/java/org/acme/FixedKeyProcessor.java",
        "public interface FixedKeyProcessor {\n    void process(FixedKeyRecord record);\n}\n",
    )
    idx = open_index(repo)
    idx.update()
    hit = idx.search("Fixed a crash in the processor", 1)[0]
    assert hit.path == "streams/src/main/java/org/acme/ProcessorNode.java"
    # a query of nothing but such words is still searched with them
    assert idx.search("fixed", 1)[0].path == "streams/src/main/java/org/acme/FixedKeyProcessor.java"


@pytest.mark.parametrize(
    ("path", "script"),
    [
        ("bin/contributors.js", True),
        ("bin/check-build-version.mjs", True),
        ("bin/kafka-run-class.sh", False),  # a launcher: what runs the program
        ("bin/mytool", False),  # an extensionless script may be the program itself
        ("src/bin/rg.rs", False),  # a cargo binary: the program itself
        ("crates/core/bin/main.rs", False),
        ("lib/binary.js", False),
    ],
)
def test_a_javascript_packages_bin_folder_holds_scripts(path: str, script: bool) -> None:
    assert is_example_path(path) is script


def test_a_release_script_ranks_below_the_code_it_describes(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    # a changelog generator says every kind of change in commit words
    write(
        repo,
        "bin/contributors.js",
        "// group security fixes, CSRF and vulnerability reports for the release notes\n"
        "export function securityFixes(commits) {\n"
        "  return commits.filter((c) => /security|csrf|vulnerability/i.test(c.subject));\n}\n",
    )
    write(
        repo,
        "lib/adapters/xhr.js",
        "// send the XSRF token only to the same origin (CSRF)\n"
        "export function xsrfHeader(config, origin) {\n"
        "  return isSameOrigin(config.url, origin) ? readCookie(config.xsrfCookieName) : null;\n}\n",
    )
    idx = open_index(repo)
    idx.update()
    assert idx.search("fix(CSRF): fixed CSRF vulnerability", 2)[0].path == "lib/adapters/xhr.js"
