"""Each ecosystem's conventions for tests, generated files and dependency folders, through
the real walker and ranking: ``FooTest.php``, ``Foo.Tests/``, ``src/androidTest/``,
``*.Designer.cs``, ``*.g.dart``, ``Pods/``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import Index
from indexer.files import walk
from indexer.paths import is_generated_path, is_test_path
from indexer.structure import is_tooling_path
from indexer.subjects import subject_of_test

from .conftest import write


@pytest.mark.parametrize(
    "path",
    [
        "tests/Unit/CarrierTest.php",
        "src/CarrierTest.php",
        "src/Shipping.Tests/CarrierSelectorTests.cs",
        "Shipping.UnitTests/Selector.cs",
        "Tests/ShippingTests/SelectorTests.swift",
        "app/src/androidTest/kotlin/ShippingTest.kt",
        "shared/src/commonTest/kotlin/Routes.kt",
        "core/src/main/scala/CarrierSpec.scala",
        "test/shipping/carrier_test.exs",
        "spec/carrier_spec.lua",
        "test/carrier_test.dart",
        "t/ledger.t",
    ],
)
def test_test_files_by_convention(path: str) -> None:
    assert is_test_path(path)


@pytest.mark.parametrize(
    "path",
    [
        "src/Latest.kt",  # "test" in lower case inside a word
        "src/main/java/KeySpec.java",  # a class named Spec in a language without spec tests
        "lib/contest/entry.ex",
        "Sources/Shipping/Selector.swift",
        "src/Shipping/CarrierSelector.cs",
    ],
)
def test_code_files_are_not_tests(path: str) -> None:
    assert not is_test_path(path)


@pytest.mark.parametrize(
    ("path", "subject"),
    [
        ("tests/CarrierTest.php", "Carrier"),
        ("Tests/SelectorTests.swift", "Selector"),
        ("Tests/ShelfTests.m", "Shelf"),
        ("src/test/scala/RouterSpec.scala", "Router"),
        ("test/router_test.exs", "router"),
        ("test/router_test.dart", "router"),
        ("spec/router_spec.lua", "router"),
    ],
)
def test_a_test_names_its_subject(path: str, subject: str) -> None:
    assert subject_of_test(path) == subject


def test_generated_names() -> None:
    for path in ("ui/MainForm.Designer.cs", "obj/Api.g.cs", "lib/user.g.dart",
                 "lib/user.freezed.dart", "Sources/Proto/route.pb.swift"):  # fmt: skip
        assert is_generated_path(path), path
    assert not is_generated_path("lib/user.dart")


def test_dependency_folders_are_not_walked(repo: Path) -> None:
    for rel in ("Pods/Alamofire/Session.swift", "Carthage/Checkouts/x/A.swift",
                ".dart_tool/build/a.dart", "_build/dev/lib/a.ex", "zig-out/a.zig",
                ".terraform/modules/vpc/main.tf",
                "Sources/App/Main.swift"):  # fmt: skip
        write(repo, rel, "// code\n")
    assert [c.rel for c in walk(repo)] == ["Sources/App/Main.swift"]


def test_generated_file_ranks_below_its_source(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    body = """
        namespace Shop
        {
            public partial class CheckoutForm
            {
                private void LayoutPaymentButtons()
                {
                    payButton.Left = cancelButton.Right + 8;
                }
            }
        }
        """
    write(repo, "Shop/CheckoutForm.Designer.cs", body)
    write(
        repo,
        "Shop/CheckoutForm.cs",
        body.replace("LayoutPaymentButtons", "LayoutPaymentButtonsNow"),
    )
    idx = open_index(repo)
    idx.update()
    hits = idx.search("layout payment buttons", k=5)
    methods = [h.path for h in hits if h.kind == "method"]  # the same text, a name apart
    assert methods == ["Shop/CheckoutForm.cs", "Shop/CheckoutForm.Designer.cs"]


def test_build_manifests_are_tooling() -> None:
    for path in ("app/build.gradle.kts", "settings.gradle.kts", "Package.swift",
                 "Package@swift-6.0.swift", "mix.exs", "build.zig", "Makefile.PL"):  # fmt: skip
        assert is_tooling_path(path), path
    assert not is_tooling_path("Sources/App/Package.swift.txt")
    assert not is_tooling_path("lib/plug/builder.ex")
