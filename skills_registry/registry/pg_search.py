"""Search and listing on PostgreSQL, mixed into ``PostgresStore`` (which provides ``_read``).

Words match a weighted ``tsvector`` (name A, description B) over a GIN index, ranked as the
SQLite store's bm25 weights rank them; substrings and scripts without word breaks (CJK) match
through ``pg_trgm``. Answers are cached while the change feed's newest ``seq`` is unchanged (``answer_cache``,
bounded).
"""

from __future__ import annotations

import re
import threading
from typing import Any

from skills_registry.registry.answer_cache import AnswerCache, page_size
from skills_registry.registry.sqlite_schema import MAX_QUERY_TERMS, STOPWORDS, cjk_bigrams
from skills_registry.registry.storage import decode_cursor, encode_cursor, normalize_time


def _ts_query(query: str) -> str:
    """OR of the query's words (stop words dropped unless nothing else is left), prefix
    matching for words of 3+ characters and CJK bigrams: the SQLite store's ``fts_query``."""
    words = re.findall(r"\w+", cjk_bigrams(query.lower()))
    kept = [w for w in words if w not in STOPWORDS] or words
    seen: list[str] = []
    for word in kept:
        if word not in seen:
            seen.append(word)
    return " | ".join(_ts_terms(seen))


def _ts_terms(words: list[str]) -> list[str]:
    return [f"'{w}':*" if len(w) >= 3 and w.isascii() else f"'{w}'" for w in words][
        :MAX_QUERY_TERMS
    ]


RANKED_TERMS = 8  # the score counts the first 8 query words; later ones still match


def _weighted(tsq: str, weight: str) -> list[str]:
    """Each term of an OR-query restricted to one weight (A: name, B: description)."""
    return [t + weight if t.endswith(":*") else f"{t}:{weight}" for t in tsq.split(" | ")][
        :RANKED_TERMS
    ]


def skill_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "namespace": row["namespace"],
        "name": row["name"],
        "description": row["description"],
        "latestVersion": row["latest"],
        "deprecated": row["deprecated"],
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
    }


SKILL_COLS = (
    "s.id, s.namespace, s.name, s.description, s.latest, s.deprecated, s.created_at, s.updated_at"
)


class PostgresSearch:
    _cache_lock: threading.Lock
    search_cache: AnswerCache  # shared by the instance's threads, under ``_cache_lock``

    def _read(self, sql: str, params: Any = ()) -> list[dict[str, Any]]:
        raise NotImplementedError

    def search(
        self,
        query: str = "",
        *,
        namespace: str | None = None,
        updated_since: str | None = None,
        cursor: str | None = None,
        limit: int = 20,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Search or list, through a small cache valid while no write has committed anywhere.

        Every write appends to the change feed, whose newest ``seq`` (gap-safe, see
        ``pg_store``) is one index lookup: while it is unchanged, an earlier answer is still
        the answer.
        """
        marker = self._read("SELECT max(seq) AS seq FROM changes")[0]["seq"]
        limit = page_size(limit)
        key = (query, namespace, updated_since, cursor, limit)
        with self._cache_lock:
            self.search_cache.valid_for(marker)
            hit = self.search_cache.get(key)
        if hit is None:
            hit = self._search(query, namespace, updated_since, cursor, limit)
            with self._cache_lock:
                if self.search_cache.marker == marker:
                    self.search_cache.put(key, hit)
        items, next_cursor = hit
        return [dict(item) for item in items], next_cursor

    def _search(
        self,
        query: str,
        namespace: str | None,
        updated_since: str | None,
        cursor: str | None,
        limit: int,
    ) -> tuple[list[dict[str, Any]], str | None]:
        limit = page_size(limit)
        where: list[str] = []
        args: dict[str, Any] = {"lim": limit + 1}
        if namespace:
            where.append("s.namespace = %(ns)s")
            args["ns"] = namespace
        if updated_since:
            where.append("s.updated_at >= %(since)s")
            args["since"] = normalize_time(updated_since)
        state = decode_cursor(cursor) if cursor else {}
        tsq, text = _ts_query(query), query.strip().lower()
        if text:
            # Pages rank only the skills that existed at the first page (see the SQLite store).
            upto = (
                state.get("upto")
                or self._read("SELECT coalesce(max(pk), 0) AS pk FROM skills")[0]["pk"]
            )
            where.append("s.pk <= %(upto)s")
            args.update(
                tsq=tsq,
                like="%" + _escape_like(text) + "%",
                off=int(state.get("offset", 0)),
                upto=int(upto),
            )
            filters = "".join(f" AND {w}" for w in where).replace("s.", "")
            rows = self._text_search(args, tsq, text, filters, limit + 1)
            next_state: dict[str, Any] = {"offset": args["off"] + limit, "upto": int(upto)}
        else:
            if "after" in state:
                where.append("s.id > %(after)s")
                args["after"] = str(state["after"])
            sql = (
                f"SELECT {SKILL_COLS} FROM skills s"
                + (" WHERE " + " AND ".join(where) if where else "")
                + " ORDER BY s.id LIMIT %(lim)s"
            )
            rows = self._read(sql, args)
            next_state = {"after": rows[limit - 1]["id"]} if len(rows) > limit else {}
        items = [skill_row(r) for r in rows[:limit]]
        return items, (encode_cursor(next_state) if len(rows) > limit else None)

    def _text_search(
        self, args: dict[str, Any], tsq: str, text: str, filters: str, want: int
    ) -> list[dict[str, Any]]:
        """Word matches ranked (the GIN index), then substring-only matches (the trigram index).

        Substring matches the word search missed rank after all of its matches, so the second
        query runs only when the requested page reaches past them. Each query ranks the matches
        alone and joins back only the page (an OR of both paths in one WHERE lets the planner
        choose a scan that evaluates the tsquery on every row).
        """
        bonus = "(CASE WHEN name LIKE %(like)s THEN 1 ELSE 0 END)"
        words = "search @@ to_tsquery('english', %(tsq)s)"
        page = (
            f"SELECT {SKILL_COLS}, m.r FROM (SELECT pk, {{score}} AS r FROM skills WHERE {{match}}"
            f"{filters} ORDER BY r DESC, pk LIMIT %(lim)s OFFSET %(off)s) m"
            " JOIN skills s ON s.pk = m.pk ORDER BY m.r DESC, s.pk"
        )
        rows: list[dict[str, Any]] = []
        off = int(args["off"])
        if tsq:
            # Each query word found in the name scores 4, in the description 1 (as the SQLite
            # store's bm25 weights). Weight-restricted matches are cheap per row; ts_rank is
            # several times slower and this runs on every match, not only the page.
            terms: dict[str, str] = {}
            parts = []
            for i, (name_t, desc_t) in enumerate(
                zip(_weighted(tsq, "A"), _weighted(tsq, "B"), strict=True)
            ):
                terms[f"n{i}"], terms[f"d{i}"] = name_t, desc_t
                parts.append(
                    f"(CASE WHEN search @@ to_tsquery('english', %(n{i})s) THEN 4 ELSE 0 END"
                    f" + CASE WHEN search @@ to_tsquery('english', %(d{i})s) THEN 1 ELSE 0 END)"
                )
            score, params = " + ".join(parts), {**args, **terms, "lim": want}
            if len(parts) < 4:
                # A name match scores >= 4 and a row without one <= len(parts) < 4: name matches
                # come first, so a page they fill is read from the name-only index alone.
                named = "search_names @@ to_tsquery('english', %(tsq)s)"
                rows = self._read(page.format(score=score, match=named), params)
            if len(rows) < want:
                rows = self._read(page.format(score=score, match=words), params)
        if len(rows) >= want or (tsq and (len(text) < 3 or " " in text)):
            return rows
        before = off + len(rows)
        if tsq and not rows and off:
            before = self._read(f"SELECT count(*) AS n FROM skills WHERE {words}{filters}", args)[
                0
            ]["n"]
        match = "search_text LIKE %(like)s" + (f" AND NOT {words}" if tsq else "")
        extra = {**args, "lim": want - len(rows), "off": max(0, off - before)}
        return rows + self._read(page.format(score=bonus, match=match), extra)


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
