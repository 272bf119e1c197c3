"""The history-mined set: a bug-fix commit's subject is the query, the source files the fix touched
are the answer, and the corpus is the repository as it was just before the fix (the parent).

Each query is run against its own parent snapshot, not one shared snapshot: a single base commit
would hold files that moved or did not exist yet. To keep that affordable, one private checkout
follows the parents in commit order with ``git checkout``, which rewrites only the files that
differ, so an index with mtime/hash change detection re-reads a handful of files per step. The
checkout is a ``--shared`` clone whose ``HEAD`` is the parent, so the index's history signal
sees only commits that existed before the fix. The user's repository is only read.
"""

from __future__ import annotations

import glob
import re
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bench.datasets import DatasetError, Query

FIX_SUBJECT = re.compile(
    r"\b(fix(e[sd])?|fixing|bug(fix)?|issue|crash(es|ed)?|error|exception|regression|broken|"
    r"incorrect(ly)?|wrong|handle|prevent|avoid)\b",
    re.IGNORECASE,
)
# Fixes to the project's tooling or prose, not to its behaviour.
NOISE_SUBJECT = re.compile(
    r"\b(typos?|docs?|documentation|docstrings?|changelog|changes\.rst|readme|lint|flake8|mypy|"
    r"pyright|ruff|black|isort|typing|type hints?|annotations?|ci|tox|nox|pre-commit|formatting|spelling|"
    r"tests?|release|version|bump|revert|merge)\b",
    re.IGNORECASE,
)
# The same for other ecosystems' tooling (applied to non-Python fixes only, so the Python
# sets stay exactly as they were).
_OTHER_NOISE = re.compile(
    r"\b(clippy|rustfmt|gofmt|golangci|eslint|prettier|tsc|deps|dependencies|dependabot|chore|"
    r"cargo|msrv|gradle|maven|pom|javadoc|jsdoc|benchmarks?)\b",
    re.IGNORECASE,
)
_ISSUE_REFS = re.compile(r"\(\s*#\d+\s*\)|\b(gh-|#)\d+\b|\bhttps?://\S+")
# A leading tracker key such as ``KAFKA-16511:`` (JIRA style) names the ticket, and follow-up commits of
# the same ticket repeat it: removed from non-Python subjects only, so the Python sets' queries
# stay exactly as they were.
_TRACKER_KEY = re.compile(r"^(\[?[A-Z][A-Z0-9]+-\d+\]?[,:;]?\s*)+")
_NON_SOURCE_DIRS = {
    "test",
    "tests",
    "testing",
    "testsuite",
    "docs",
    "doc",
    "examples",
    "example",
    "scripts",
}
_NON_SOURCE_FILES = {
    "setup.py",
    "conftest.py",
    "noxfile.py",
    "tasks.py",
    "conf.py",
    "__version__.py",
    "__about__.py",
}


# Source files of the other languages a set may be mined from, by family (the baseline reads
# every file of the set's family).
FAMILIES = {
    ".py": (".py",),
    ".rs": (".rs",),
    ".go": (".go",),
    ".java": (".java",),
    **dict.fromkeys(
        (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"),
        (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"),
    ),
}
# Beyond the Python rules: where other ecosystems keep tests, fixtures, benchmarks, vendored
# and generated code.
_OTHER_NON_SOURCE_DIRS = {
    "__tests__",
    "__mocks__",
    "testdata",
    "test-data",
    "fixtures",
    "benches",
    "benchmarks",
    "bench",
    "e2e",
    "vendor",
    "third_party",
    "node_modules",
    "dist",
    "build",
    "target",
    "generated",
}
_OTHER_TEST_NAME = re.compile(
    r"(_test\.go|\.(test|spec)\.[cm]?[jt]sx?|\.d\.[cm]?ts|(Test|Tests|IT|TestCase)\.java|"
    r"^build\.rs|\.(conf|config)\.[cm]?[jt]s|^(gulpfile|gruntfile)\.[cm]?js|^\..*)$",
    re.IGNORECASE,
)


# Rust keeps unit tests beside the code: ``tests.rs``, ``server.tests.rs`` (a ``#[path]`` module),
# ``parser_test.rs``, ``server_test_utils.rs``.
_RUST_TEST_NAME = re.compile(r"^(.*[._])?tests?(_utils?)?\.rs$")
# Benchmark modules named as such (``jmh-benchmarks/``, ``perf_bench/``).
_BENCH_PART = {"bench", "benches", "benchmark", "benchmarks", "jmh"}


def is_source(path: str) -> bool:
    """Library code a fix can be located in: outside tests, docs and tooling (Python, Rust,
    Go, JavaScript/TypeScript, Java)."""
    p = PurePosixPath(path)
    if p.suffix not in FAMILIES or p.name in _NON_SOURCE_FILES:
        return False
    if p.suffix == ".py":
        if p.name.startswith("test_") or p.name.endswith("_test.py"):
            return False
        return not any(part in _NON_SOURCE_DIRS for part in p.parts[:-1])
    if _OTHER_TEST_NAME.search(p.name) or _RUST_TEST_NAME.match(p.name):
        return False
    dirs = _NON_SOURCE_DIRS | _OTHER_NON_SOURCE_DIRS
    return not any(
        part in dirs or part.startswith(".") or _BENCH_PART & set(re.split(r"[-_]", part))
        for part in p.parts[:-1]
    )


def suffixes_of(qs: list[Query]) -> tuple[str, ...]:
    """The source suffixes of a set's language(s): what its baseline reads."""
    found: set[str] = set()
    for q in qs:
        for f in q.files:
            found.update(FAMILIES.get(PurePosixPath(f).suffix, ()))
    return tuple(sorted(found)) or (".py",)


def clean_subject(subject: str) -> str:
    """Drop issue numbers and URLs: they name the answer's ticket, not the code."""
    text = _ISSUE_REFS.sub(" ", subject)
    return re.sub(r"\s+", " ", text).strip(" .:-")


@dataclass(frozen=True)
class FixCommit:
    sha: str
    parent: str
    subject: str
    files: tuple[str, ...]


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, env=env, check=False
    )
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["git failed"])[0]
        raise DatasetError(f"git {args[0]} failed in {repo}: {first}")
    return proc.stdout


def git_dir(repo: Path) -> Path:
    if not repo.is_dir():
        raise DatasetError(f"not a directory: {repo}", hint="--repo takes a local git checkout")
    try:
        return Path(_git(repo, "rev-parse", "--absolute-git-dir").strip())
    except DatasetError as exc:
        raise DatasetError(
            f"not a git repository: {repo}", hint="clone it first: git clone URL PATH"
        ) from exc


def mine(repo: Path, *, max_commits: int = 150, max_files: int = 4) -> list[FixCommit]:
    """The newest ``max_commits`` fix-like commits, oldest first.

    Kept: one parent, a fix-like subject that is not about docs/tests/tooling and that no older
    commit already had, 1..max_files source files touched and all of them modified in place
    (an added file cannot be found in the parent; a deleted one is not where the fix went).
    """
    git_dir(repo)
    log = _git(
        repo,
        "log",
        "--no-merges",
        "--no-renames",
        "--format=%x1e%H%x1f%P%x1f%s",
        "--name-status",
        "HEAD",
    )
    records = [r.partition("\n") for r in log.split("\x1e") if r.strip()]
    # A subject an older commit already had (a cherry-pick, a re-applied fix): the history
    # signal would be handed the answer, so such repeats are not queries.
    older = Counter(clean_subject(h.split("\x1f", 2)[2]).lower() for h, _, _ in records)
    found: list[FixCommit] = []
    for header, _, body in records:
        sha, parents, subject = header.split("\x1f", 2)
        key = clean_subject(subject).lower()
        older[key] -= 1
        if older[key] > 0:
            continue
        if len(parents.split()) != 1:
            continue
        if not FIX_SUBJECT.search(subject) or NOISE_SUBJECT.search(subject):
            continue
        changes = [line.split("\t") for line in body.strip().splitlines() if "\t" in line]
        source = [(st, path) for st, path, *_ in changes if is_source(path)]
        if not 1 <= len(source) <= max_files or any(st != "M" for st, _ in source):
            continue
        if any(not p.endswith(".py") for _, p in source) and _OTHER_NOISE.search(subject):
            continue
        query = clean_subject(subject)
        if any(not p.endswith(".py") for _, p in source):
            query = clean_subject(_TRACKER_KEY.sub(" ", query))
        if len(re.findall(r"[A-Za-z]{2,}", query)) < 3:
            continue
        found.append(FixCommit(sha, parents.strip(), query, tuple(sorted(p for _, p in source))))
        if len(found) >= max_commits:
            break
    if not found:
        raise DatasetError(f"no bug-fix commits found in {repo}", hint="is it a shallow clone?")
    return list(reversed(found))


def queries(commits: list[FixCommit]) -> list[Query]:
    return [Query(c.sha[:12], c.subject, frozenset(c.files), (), c.parent) for c in commits]


class Snapshot:
    """A private checkout of ``repo`` that can be moved to any commit, rewriting only changes.

    It is a ``git clone --shared`` (objects are read from ``repo``, which is never written),
    so ``HEAD`` in the checkout is the snapshot's commit and the index sees the history that
    existed at that point, no later commit."""

    def __init__(self, repo: Path, root: Path) -> None:
        self.repo = repo
        self.root = root
        self.commit = ""
        self.excluded: set[str] = set()  # paths whose blob the clone lacks
        git_dir(repo)

    def goto(self, commit: str) -> None:
        if not (self.root / ".git").exists():
            self.root.parent.mkdir(parents=True, exist_ok=True)
            _git(
                self.root.parent,
                "clone",
                "--quiet",
                "--shared",
                "--no-checkout",
                str(self.repo.resolve()),
                str(self.root),
            )
        try:
            self._checkout(commit)
        except DatasetError:
            # A mirror may lack its largest blobs (a capped snapshot): leave those files out
            # of the checkout and of the corpus instead of failing the whole set.
            if not self._exclude_missing(commit):
                raise
            self._checkout(commit)
        self.commit = commit

    def _checkout(self, commit: str) -> None:
        _git(self.root, "-c", "advice.detachedHead=false", "checkout", "--quiet", "-f", commit)

    def _exclude_missing(self, commit: str) -> bool:
        """Add the paths of ``commit``'s absent blobs to a sparse-checkout exclusion list;
        False when none is absent (the checkout failed for another reason)."""
        tree = _git(self.root, "ls-tree", "-r", "--full-tree", commit)
        paths = {}
        for line in tree.splitlines():
            meta, _, path = line.partition("\t")
            _, kind, sha = meta.split()
            if kind == "blob":
                paths.setdefault(sha, []).append(path)
        check = subprocess.run(
            ["git", "cat-file", "--batch-check"],
            cwd=self.root,
            input="\n".join(paths),
            capture_output=True,
            text=True,
            check=False,
        )
        absent = {
            p
            for line in check.stdout.splitlines()
            if line.endswith(" missing")
            for p in paths.get(line.split()[0], ())
        }
        if not absent - self.excluded:
            return False
        self.excluded |= absent
        info = Path(_git(self.root, "rev-parse", "--absolute-git-dir").strip()) / "info"
        info.mkdir(exist_ok=True)
        patterns = ["/*", *(f"!/{glob.escape(p)}" for p in sorted(self.excluded))]
        (info / "sparse-checkout").write_text("\n".join(patterns) + "\n", encoding="utf-8")
        _git(self.root, "config", "core.sparseCheckout", "true")
        return True

    def blobs(self, suffix: str | tuple[str, ...] = ".py") -> dict[str, str]:
        """Path -> blob id of the current commit's files, for caching per content."""
        out = _git(self.root, "ls-tree", "-r", "--full-tree", self.commit)
        blobs = {}
        for line in out.splitlines():
            meta, _, path = line.partition("\t")
            mode, kind, sha = meta.split()
            if (
                kind == "blob"
                and path.endswith(suffix)
                and mode != "120000"
                and (path not in self.excluded)
            ):
                blobs[path] = sha
        return blobs
