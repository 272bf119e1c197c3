"""Rows whose namespace or name ends in a newline, written before the id rules were anchored
with `\\A…\\Z` (`evil\\n` passed `^…$`), stay in a registry's database. What reads them now:
the marketplace (served, printed, exported) leaves such a skill out, since its id would name a
plugin, a git URL and a folder with a newline in it, and `kiln registry marketplace` says so on
stderr; `kiln registry audit` and `token list` print each entry on one line, the id escaped,
and `audit` names such ids on stderr. Before, the export wrote a folder named `evil\\n` and the
audit's entry for it broke into two lines. Such a skill is not served either, by exact id (a
404 naming the rules), nor listed, and a token for such a namespace authenticates nothing:
before, all of them answered as for any skill, and that token still published."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import httpx

from tests.registry.conftest import FIXTURES, cli_env, kiln, ok, serving

BAD = "evil\n/brand-guidelines"
OLD_TOKEN = "kiln_pre_rule_token"  # the secret of the token row written below


def _write_pre_rule_rows(db_path: Path) -> None:
    """What a publish by a token for `evil\\n` stored before the rules refused it."""
    db = sqlite3.connect(db_path)
    with db:
        db.execute(
            "INSERT INTO skills (id, namespace, name, description, latest, deprecated,"
            " created_at, updated_at) SELECT ?, 'evil' || char(10), name, description, latest,"
            " deprecated, created_at, updated_at FROM skills WHERE id = 'acme/brand-guidelines'",
            (BAD,),
        )
        doc = json.loads(db.execute("SELECT doc FROM versions").fetchone()[0])
        doc.update(id=BAD, namespace="evil\n")
        db.execute(
            "INSERT INTO versions (skill_id, version, status, status_reason, published_at, doc,"
            " archive_sha256, archive_size) SELECT ?, version, status, status_reason,"
            " published_at, ?, archive_sha256, archive_size FROM versions",
            (BAD, json.dumps(doc)),
        )
        db.execute(
            "INSERT INTO audit (at, action, skill_id, version, sha256, namespace, token_id,"
            " token_label) SELECT at, action, ?, version, sha256, 'evil' || char(10), token_id,"
            " token_label FROM audit",
            (BAD,),
        )
        db.execute(
            "INSERT INTO tokens (token_sha256, namespace, created_at, id, label, scopes)"
            " VALUES (?, 'evil' || char(10), '2026-01-01T00:00:00Z', 'tok_0123456789ab', 'old',"
            " 'publish yank tag')",
            (hashlib.sha256(OLD_TOKEN.encode()).hexdigest(),),
        )
    db.close()


def test_a_pre_rule_id_is_left_out_and_shown_escaped(tmp_path: Path) -> None:
    data, home = tmp_path / "data", tmp_path / "home"
    env = cli_env(home)
    with serving(data, home) as port:
        url = f"http://127.0.0.1:{port}"
        token = ok(kiln("registry", "token", "--namespace", "acme", "--data", str(data),
                        env=env, cwd=tmp_path)).strip()  # fmt: skip
        ok(kiln("skills", "publish", str(FIXTURES / "brand-guidelines"), "--version", "1.0.0",
                "--token", token, "--registry", url, env=env, cwd=tmp_path))  # fmt: skip
        _write_pre_rule_rows(data / "registry.db")
        listed = httpx.get(f"{url}/v1/skills").json()["skills"]
        assert [s["id"] for s in listed] == ["acme/brand-guidelines"]
        served = httpx.get(f"{url}/.claude-plugin/marketplace.json").json()
        assert [p["kiln"]["id"] for p in served["plugins"]] == ["acme/brand-guidelines"]

    out = tmp_path / "market"
    exported = kiln("registry", "marketplace", "--data", str(data), "--base-url", url,
                    "--out", str(out), env=env, cwd=tmp_path)  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == f"wrote 1 skills to {out}\n"
    assert exported.stderr.splitlines() == [
        "kiln: warning: 1 skill id(s) break the registry's id rules (written before a trailing "
        "newline was refused): evil\\n/brand-guidelines; left out of the marketplace"
    ]
    assert sorted(p.name for p in (out / "skills").iterdir()) == ["acme"]
    printed = kiln("registry", "marketplace", "--data", str(data), "--base-url", url,
                   env=env, cwd=tmp_path)  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    plugins = json.loads(printed.stdout)["plugins"]
    assert [p["kiln"]["id"] for p in plugins] == ["acme/brand-guidelines"]
    assert "left out of the marketplace" in printed.stderr

    audit = kiln("registry", "audit", "--data", str(data), env=env, cwd=tmp_path)
    assert audit.returncode == 0, audit.stderr
    lines = audit.stdout.splitlines()
    assert len(lines) == 2 and all(line.split(" ", 1)[0].isdigit() for line in lines), lines
    assert " publish evil\\n/brand-guidelines@1.0.0 " in lines[1]
    assert audit.stderr.count("\n") == 1 and "evil\\n/brand-guidelines" in audit.stderr

    tokens = ok(kiln("registry", "token", "list", "--data", str(data), env=env, cwd=tmp_path))
    assert len(tokens.splitlines()) == 2 and "  evil\\n  publish,yank,tag  " in tokens, tokens


def test_a_pre_rule_id_is_not_served_and_its_token_authenticates_nothing(tmp_path: Path) -> None:
    data, home = tmp_path / "data", tmp_path / "home"
    env = cli_env(home)
    with serving(data, home) as port:
        url = f"http://127.0.0.1:{port}"
        token = ok(kiln("registry", "token", "--namespace", "acme", "--data", str(data),
                        env=env, cwd=tmp_path)).strip()  # fmt: skip
        ok(kiln("skills", "publish", str(FIXTURES / "brand-guidelines"), "--version", "1.0.0",
                "--token", token, "--registry", url, env=env, cwd=tmp_path))  # fmt: skip
        _write_pre_rule_rows(data / "registry.db")
        skill = f"{url}/v1/skills/evil%0A/brand-guidelines"
        for path in ("", "/metadata", "/versions", "/versions/1.0.0", "/versions/1.0.0/archive",
                     "/versions/1.0.0/tools", "/versions/1.0.0/files/SKILL.md"):  # fmt: skip
            answer = httpx.get(skill + path)
            assert answer.status_code == 404, (path, answer.text)
            error = answer.json()["error"]
            assert error["code"] == "invalid_id", (path, error)
            assert error["message"].startswith(
                "skill id 'evil\\n/brand-guidelines' breaks the registry's id rules (a namespace "
                "is lowercase a-z, digits and inner '-'"
            ), error
        git = httpx.get(f"{url}/git/evil%0A/brand-guidelines.git/info/refs")
        assert git.status_code == 404 and git.json()["error"]["code"] == "invalid_id"
        # the valid skill of the same rows is served as before
        assert httpx.get(f"{url}/v1/skills/acme/brand-guidelines/metadata").status_code == 200

        bearer = {"Authorization": f"Bearer {OLD_TOKEN}"}
        whoami = httpx.get(f"{url}/v1/whoami", headers=bearer)
        assert whoami.status_code == 401, whoami.text
        assert whoami.json()["error"]["message"].startswith(
            "token tok_0123456789ab cannot authenticate: its namespace 'evil\\n' breaks the "
            "registry's id rules"
        ), whoami.text
        yank = httpx.put(f"{skill}/versions/1.0.0/status", headers=bearer,
                         json={"status": "yanked", "reason": "taken over"})  # fmt: skip
        assert yank.status_code == 401, yank.text
        publish = httpx.put(f"{url}/v1/skills/evil%0A/other/versions/1.0.0", headers=bearer,
                            content=b"\x1f\x8b")  # fmt: skip
        assert publish.status_code == 422 and "invalid namespace" in publish.text  # as before
    db = sqlite3.connect(data / "registry.db")
    statuses = db.execute("SELECT status FROM versions WHERE skill_id = ?", (BAD,)).fetchall()
    db.close()
    assert statuses == [("active",)]  # the yank wrote nothing


def test_the_change_feed_and_migrate_leave_a_pre_rule_id_out(tmp_path: Path) -> None:
    """Before, `/v1/changes` listed the pre-rule id's entries (a mirror following it asked for
    an id the registry serves nothing under) and `kiln registry migrate` copied its versions."""
    data, home = tmp_path / "data", tmp_path / "home"
    env = cli_env(home)
    with serving(data, home) as port:
        url = f"http://127.0.0.1:{port}"
        token = ok(kiln("registry", "token", "--namespace", "acme", "--data", str(data),
                        env=env, cwd=tmp_path)).strip()  # fmt: skip
        publish = ("skills", "publish", str(FIXTURES / "brand-guidelines"), "--token", token,
                   "--registry", url)  # fmt: skip
        ok(kiln(*publish, "--version", "1.0.0", env=env, cwd=tmp_path))
        _write_pre_rule_rows(data / "registry.db")
        db = sqlite3.connect(data / "registry.db")
        with db:  # the feed entry that publish wrote then, between two valid ones
            db.execute(
                "INSERT INTO changes (skill_id, version, kind, at) SELECT ?, version, kind, at"
                " FROM changes",
                (BAD,),
            )
        db.close()
        ok(kiln(*publish, "--version", "1.0.1", env=env, cwd=tmp_path))
        whole = httpx.get(f"{url}/v1/changes").json()
        assert [(c["id"], c["version"]) for c in whole["changes"]] == [
            ("acme/brand-guidelines", "1.0.0"),
            ("acme/brand-guidelines", "1.0.1"),
        ], whole
        assert whole["metadata"]["nextSince"] == 3
        seen, since = [], 0  # a mirror walking one entry a page, until an empty page
        for _ in range(10):
            page = httpx.get(f"{url}/v1/changes", params={"since": since, "limit": 1}).json()
            if not page["changes"]:
                break
            seen += [(c["seq"], c["id"]) for c in page["changes"]]
            since = page["metadata"]["nextSince"]
        assert seen == [(1, "acme/brand-guidelines"), (3, "acme/brand-guidelines")], seen

    dst = tmp_path / "dst"
    migrated = kiln(
        "registry", "migrate", "--from", f"sqlite://{data}/registry.db",
        "--from-blobs", f"file://{data}/blobs", "--to", f"sqlite://{dst}/registry.db",
        "--to-blobs", f"file://{dst}/blobs", "--signing-key", str(data / "keys" / "ed25519.key"),
        env=env, cwd=tmp_path,
    )  # fmt: skip
    assert migrated.returncode == 0, migrated.stderr
    assert migrated.stdout == "1 skills: 2 versions copied, 0 already present (verified)\n"
    assert migrated.stderr.splitlines()[-1] == (
        "kiln: warning: 1 skill id(s) break the registry's id rules (written before a trailing "
        "newline was refused): evil\\n/brand-guidelines; not copied"
    ), migrated.stderr
    copied = sqlite3.connect(dst / "registry.db")
    ids = {row[0] for row in copied.execute("SELECT skill_id FROM versions")}
    ids |= {row[0] for row in copied.execute("SELECT id FROM skills")}
    copied.close()
    assert ids == {"acme/brand-guidelines"}
