"""One fixture file per language, one key-symbol assertion each: the block exists with the
right kind and name, and searching for the symbol finds it first."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import Index
from indexer.chunker import chunk_file

from .conftest import FIXTURES

CASES = [
    ("sample.py", "method", "InvoiceBuilder.add_line", "add line item invoice"),
    ("sample.js", "class", "ShoppingCart", "shopping cart"),
    ("sample.ts", "function", "withRetries", "retries exponential backoff"),
    ("sample.tsx", "function", "StatusBadge", "status badge label"),
    ("sample.go", "function", "TokenBucket.Allow", "token bucket allow request"),
    ("sample.rs", "method", "LruCache.evict_oldest", "evict oldest entry"),
    ("Sample.java", "method", "OrderValidator.validateOrder", "validate order items"),
    ("sample.c", "function", "ring_buffer_push", "ring buffer push byte"),
    ("sample.cpp", "class", "BoundingBox", "bounding box"),
    ("sample.rb", "method", "Notifications.Mailer.deliver_welcome", "deliver welcome message"),
    ("Sample.cs", "method", "Carrier.SurchargeFor", "surcharge remote destination"),
    ("Sample.php", "function", "renewal_allowed", "renewal allowed reserved"),
    ("Sample.kt", "function", "Zone.needsWater", "zone needs water threshold"),
    ("Sample.swift", "method", "EspressoMachine.descale", "descale every shots"),
    ("Sample.scala", "method", "Filter.byName", "filter by name"),
    ("sample.sh", "function", "upload_snapshot", "upload snapshot s3"),
    ("sample.lua", "function", "RateLimiter.try_acquire", "try acquire tokens cost"),
    ("sample.dart", "method", "PlaylistController.addTrack", "add track playlist"),
    ("sample.ex", "method", "Kitchen.OrderQueue.next_ticket", "next ticket printer"),
    ("sample.zig", "method", "WordCounter.countWords", "count words text"),
    ("Sample.hs", "function", "warmestDay", "warmest day forecast"),
    ("Sample.pm", "function", "reorder_needed", "reorder needed threshold"),
    ("sample.R", "function", "forecast_loaves", "forecast loaves trend"),
    ("sample.ml", "function", "occupancy_percent", "occupancy percent garage"),
    ("sample.ps1", "function", "Invoke-InstallerSigning", "installer signing certificate"),
    ("sample.jl", "function", "flag_outliers", "flag outliers threshold"),
    ("sample.erl", "function", "hits_in_window", "hits in window span"),
    ("sample.tf", "class", "variable.retention_days", "retention days"),
    ("Sample.mm", "method", "ReadingList.addTitle", "add title reading list"),
    ("UserCard.vue", "function", "formatHandle", "format handle at sign"),
    ("Counter.svelte", "function", "incrementCounter", "increment counter"),
    ("notes.md", "text", "notes.md", "blue-green deployment rollback"),
]


@pytest.fixture(scope="module")
def fixture_index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    root = tmp_path_factory.mktemp("langs")
    for f in FIXTURES.iterdir():
        shutil.copy(f, root / f.name)
    idx = Index(root)
    idx.update()
    yield idx
    idx.close()


@pytest.mark.parametrize(("filename", "kind", "name", "query"), CASES)
def test_key_symbol(filename: str, kind: str, name: str, query: str, fixture_index: Index) -> None:
    blocks = chunk_file(filename, (FIXTURES / filename).read_bytes())
    assert any(b.kind == kind and b.name == name for b in blocks), [
        (b.kind, b.name) for b in blocks
    ]
    top = fixture_index.search(query, k=1)[0]
    assert (top.path, top.name) == (filename, name)


def test_every_language_has_a_fixture(open_index: Callable[..., Index]) -> None:
    from indexer.languages import EXTENSIONS

    covered = {Path(c[0]).suffix for c in CASES}
    assert set(EXTENSIONS.values()) <= {EXTENSIONS.get(s.lower(), "") for s in covered}


def test_the_readme_names_every_language() -> None:
    from indexer.languages import EXTENSIONS

    shown = {
        "csharp": "C#",
        "cpp": "C++",
        "tsx": "TSX",
        "bash": "shell",
        "javascript": "JavaScript",
    }
    shown |= {
        "typescript": "TypeScript",
        "php": "PHP",
        "r": "R",
        "ocaml": "OCaml",
        "powershell": "PowerShell",
        "hcl": "Terraform",
        "objc": "Objective-C",
    }
    readme = (FIXTURES.parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## How it works") :]
    for language in set(EXTENSIONS.values()):
        name = shown.get(language, language.capitalize())
        assert name in section, name


@pytest.mark.parametrize(
    ("path", "head", "language"),
    [
        ("bin/deploy", b"#!/usr/bin/env bash\n", "bash"),
        ("scripts/build", b"#!/bin/sh -e\n", "bash"),
        ("tools/release", b"#! /usr/bin/python3.11\n", "python"),
        ("bin/serve", b"#!/usr/bin/env -S node --no-warnings\n", "javascript"),
        ("notes.txt", b"#!/bin/sh\n", "text"),  # an extension decides
        ("bin/report", b"#!/usr/bin/awk -f\n", "text"),  # no grammar for awk
        ("README", b"Read me first.\n", "text"),
        ("Cache.m", b"#import <Foundation/Foundation.h>\n", "objc"),  # .m: Objective-C ...
        ("solve.m", b"function x = solve(a)\n", "text"),  # ... or MATLAB
    ],
)
def test_a_script_without_an_extension_by_its_first_line(
    path: str, head: bytes, language: str
) -> None:
    from indexer.languages import language_of

    assert language_of(path, head + b"echo hi\n") == language
    blocks = chunk_file(path, head + b"main() {\n  echo hi\n}\n")
    assert {b.language for b in blocks} == {language}
