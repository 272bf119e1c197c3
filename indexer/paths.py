"""What a file's path says about it, for ranking: a test, an example, a vendored copy, the
output of a generator. Conventions of each ecosystem: ``tests/`` and ``foo_test.go``,
``FooTest.php``, ``Foo.Tests/`` in C#, ``src/androidTest/`` in Kotlin, ``*.g.dart``.
"""

from __future__ import annotations

import re
from functools import lru_cache

# Generator output known by its name (C# designers and source generators, Dart's build_runner,
# protobuf for Dart and Swift): indexed, but ranked down like a file whose header says so
# (``priors.generated_files``); ``.g.dart`` says "GENERATED CODE - DO NOT MODIFY BY HAND".
GENERATED_SUFFIXES = (
    ".designer.cs",
    ".g.cs",
    ".g.i.cs",
    ".generated.cs",
    ".g.dart",
    ".freezed.dart",
    ".gr.dart",
    ".mocks.dart",
    ".pb.dart",
    ".pbenum.dart",
    ".pbjson.dart",
    ".pbgrpc.dart",
    ".pb.swift",
    ".grpc.swift",
)

# Test files and folders named in CamelCase: FooTest.php, FooTests.cs, FooSpec.scala,
# src/androidTest/, src/commonTest/ (Kotlin), Foo.Tests/ and FooTests/ (C#, Swift). By case,
# so ``Latest.kt`` is no test; ``Spec`` only where test frameworks use it (``KeySpec.java``
# and ``PodSpec.go`` are code).
_CAMEL_TEST_FILE = re.compile(
    r"[a-z0-9](?:Tests?|TestCase)\.(?:kt|kts|scala|groovy|cs|php|swift)$"
    r"|[a-z0-9]Spec\.(?:scala|groovy|swift)$"
)
_CAMEL_TEST_FOLDER = re.compile(r"[a-z0-9]Tests?$|[.](?:Unit|Integration)?Tests?$")


@lru_cache(maxsize=65536)  # asked for every candidate of every search
def is_test_path(rel: str) -> bool:
    parts = rel.lower().split("/")
    name = parts[-1]
    return (
        any(
            p
            in ("test", "tests", "testing", "testsuite", "test_suite", "__tests__", "spec", "specs")
            for p in parts[:-1]
        )
        or name.startswith("test_")
        or name.endswith(".t")  # Perl
        or name.rsplit(".", 1)[0].endswith(("_test", ".test", ".spec", "_spec", "tests"))
        or _CAMEL_TEST_FILE.search(rel) is not None
        or any(_CAMEL_TEST_FOLDER.search(p) for p in rel.split("/")[:-1])
    )


# (an extensionless script in bin/ stays code: it may be the program itself, bin/mytool)
_JS_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts")


@lru_cache(maxsize=65536)  # asked for every candidate of every search
def is_example_path(rel: str) -> bool:
    if rel.startswith("bin/") and rel.endswith(_JS_SUFFIXES):
        return True  # a JavaScript package's root bin/: its CLI shims and release tools
    return any(
        p
        in (
            "example",
            "examples",
            "demo",
            "demos",
            "samples",
            "sample",
            "docs",
            "doc",
            "scripts",
            "benchmarks",
        )
        for p in rel.lower().split("/")[:-1]
    )


@lru_cache(maxsize=65536)  # asked for every candidate of every search
def is_vendored_path(rel: str) -> bool:
    return any(
        p in ("_vendor", "vendored", "extern", "external", "deps", "3rdparty")
        for p in rel.lower().split("/")[:-1]
    )


def is_generated_path(rel: str) -> bool:
    return rel.lower().endswith(GENERATED_SUFFIXES)


def nested_package_roots(rel: str) -> list[str]:
    """Where ``rel`` would be a copied-in library if its folder is a Python package: for
    ``requests/packages/urllib3/util.py`` that is ``requests`` (a ``packages/`` folder inside a
    package, holding whole packages of its own). A top-level ``packages/`` (a monorepo) and
    modules directly inside ``packages/`` (the project's own shim) never qualify. Callers check
    that ``<root>/__init__.py`` exists."""
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts) - 2) if parts[i] == "packages"]
