"""Edits in the languages added after the first nine: re-chunking only what an edit touched
(``rechunk.chunk_edit``) gives the blocks of a full chunk, on random edit sequences over each
language's fixture (the strategy of ``test_rechunk``); Vue and Svelte components, which an
edit re-chunks whole, give the blocks of a full chunk however the edits break them."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import FIXTURES
from .language_specs import TYPED
from .language_specs_scripting import SCRIPTING
from .test_rechunk import SNIPPETS, replay_edits

SPECS = TYPED + SCRIPTING

BASES = {spec.file: (FIXTURES / spec.file).read_text() for spec in SPECS}
COMPONENTS = ("UserCard.vue", "Counter.svelte")
BASES.update({name: (FIXTURES / name).read_text() for name in COMPONENTS})


@st.composite
def edit_sequences(
    draw: st.DrawFn, paths: tuple[str, ...] = ()
) -> tuple[str, list[tuple[float, int, str]]]:
    path = draw(st.sampled_from(paths or sorted(BASES)))
    edits = draw(
        st.lists(
            st.tuples(
                st.floats(0, 1),
                st.integers(0, 12),
                st.sampled_from(SNIPPETS) | st.text("ab \n(){}:=;end<>/", max_size=6),
            ),
            min_size=1,
            max_size=6,
        )
    )
    return path, edits


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edit_sequences())
def test_random_edits_give_the_blocks_of_a_full_chunk(case: tuple) -> None:
    replay_edits(BASES, case)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edit_sequences(COMPONENTS))
def test_random_edits_of_components_give_the_blocks_of_a_full_chunk(case: tuple) -> None:
    replay_edits(BASES, case)
