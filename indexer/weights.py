"""Every ranking weight and constant in one place, so the retrieval benchmark can tune them.

Nothing else in the indexer hard-codes a ranking number; they are imported from here.
"""

from __future__ import annotations

# BM25 column weights, in the FTS column order (see store.FTS_COLUMNS).
COLUMN_WEIGHTS: dict[str, float] = {
    "fts_path": 0.5,  # split path segments
    "fts_name": 4.0,  # qualified name and its split parts
    "signature": 5.0,
    "docstring": 0.5,
    "text": 1.0,  # raw code
    # camelCase parts of identifiers used in the code: the text column holds ``retryTimeout``
    # as one token, so in Java, JavaScript or Go these are the only place the code says its
    # words, where Python's ``retry_timeout`` says them in the text (weighted as the text)
    "idents": 1.0,
}

# How many lexical candidates are pulled from FTS5, and graph nodes kept, before fusion.
LEXICAL_CANDIDATES = 200
GRAPH_CANDIDATES = 100
# Most blocks whose BM25 score is computed per query (rarest terms first; see ranking._lexical).
MATCH_DOC_BUDGET = 6000
# When that left terms out, the candidates found are put in BM25 order over *all* the terms
# (``indexer/rescore.py``); False keeps the order of the rarest terms alone.
RESCORE_ALL_TERMS = True
# Name match, penalties and the like are applied to this many fused candidates (at least 4k).
PRIOR_TOP = 100

# The file list (indexer/filelist.py): files scored on every query term, the best block of
# each of the top FILE_CANDIDATES fused as a third list with this weight; 0 turns it off.
FILE_CANDIDATES = 30
FILE_LIST_WEIGHT = 1.0
FILE_COMMON_SHARE = 0.15  # a term held by more than this share of the files is left out

# Reciprocal-rank fusion: score = W / (FUSION_K + rank).
FUSION_K = 40.0
LEXICAL_WEIGHT = 1.0
GRAPH_WEIGHT = 0.1

# Personalised PageRank over the local definition->reference graph.
PAGERANK_DAMPING = 0.7
PAGERANK_ITERATIONS = 15
SEED_TOP_LEXICAL = 15  # top lexical hits that seed the walk
SEED_NAME_WEIGHT = 3.0  # a block defining an identifier the query names
SEED_PATH_WEIGHT = 0.5  # a block in a file whose path the query mentions
GRAPH_FANOUT_MAX = 25  # names defined (or referenced) in more blocks than this carry no signal
GRAPH_MAX_NODES = 400
GRAPH_EXPAND_SEEDS = 12  # the strongest seeds whose neighbours join the walk

# Exact name matches get a direct boost on top of fusion (multiplier).
NAME_MATCH_BOOST = 1.5
# Multiplier 1 + w * (coverage x precision) of the query terms in the block's qualified name.
NAME_COVERAGE_WEIGHT = 1.0
# Whether those two compare word stems ("options" names ``option``, "allows" ``allow_list``)
# rather than the words as written.
STEMMED_NAMES = True
# Whether a definition in a test (example, tooling) file named by one plain word of a query of
# several ("empty", "after") keeps its place penalty; a name of two words or more is exempt.
ONE_WORD_TEST_NAMES_KEEP_PENALTY = True
# A query identifier of two parts or more (``StandbyTask``, ``use_strict_mode``) that is a
# file's name (``StandbyTask.java``): the file's blocks are multiplied by 1 + this.
NAMED_FILE_WEIGHT = 1.0
# ... and so does the owner of a member the query names, of one word too (``Range.hashCode()``
# names ``Range.java``, ``Parser#unescape`` ``Parser.java``).
MEMBER_OWNER_NAMES_FILE = True

# Light penalties (multipliers) for paths that are rarely what a query is after.
TEST_PENALTY = 0.5
EXAMPLE_PENALTY = 0.6
VENDOR_PENALTY = 0.4
TOOLING_PENALTY = 0.6
TEXT_WINDOW_PENALTY = 0.4  # non-code fallback blocks
# A file whose first lines say a generator wrote it ("Generated file, do not edit", "@generated",
# "DO NOT EDIT"): a registry of every rule or node name matches any query, and a fix edits
# the generator's input, not its output.
GENERATED_PENALTY = 0.3

# Whether "fix", "bug" and the like are left out of the words the code is searched with. Off:
# it helped the JavaScript and large Rust dev sets but cost the Python ones (bench/README.md).
CHANGE_WORDS_OUT = False

# A query naming a test: the file the test is named after gets this x the test's score.
TEST_SUBJECT_WEIGHT = 1.0

# A query that names a component first ("ignore: …", "fix(fetch): …"): a candidate with a
# folder holding one of that component's words is multiplied by 1 + this.
SCOPE_WEIGHT = 1.0
# ... and one naming it in several words (``css_formatter``, ``format/html``, ``parser/yaml``)
# multiplies a candidate one of whose folders holds every word (``biome_css_formatter``, not
# ``biome_css_parser`` or ``biome_js_formatter``) by 1 + this as well: in a workspace of many
# crates the words one by one match half of them.
SCOPE_FOLDER_WEIGHT = 1.0
# ... and such a folder, found among the first candidates, is searched on its own
# (``indexer/scoped.py``): the file list's best SCOPE_FILE_CANDIDATES files below it (below
# at most SCOPE_FOLDERS_MAX such folders) are fused as one more list with this weight.
SCOPE_FILE_CANDIDATES = 20
SCOPE_FOLDERS_MAX = 3
# ... and when no candidate lies in such a folder, the folders of the whole tree are looked at.
SCOPE_FOLDER_FROM_TREE = True
SCOPE_FILE_WEIGHT = 1.0
# ... and the packages earlier commits with the same scope changed (``indexer/scope_history.py``):
# a candidate in one is multiplied by 1 + this x the share of those commits that touched it.
# Read from the newest SCOPE_HISTORY_SCAN commits saying the scope's words; fewer than
# SCOPE_HISTORY_MIN_COMMITS with the same scope say nothing.
SCOPE_HISTORY_WEIGHT = 1.0
SCOPE_HISTORY_SCAN = 200
SCOPE_HISTORY_MIN_COMMITS = 3

# History: earlier commits whose messages match the query vouch for the files they changed.
# A candidate's final score is (its score / the best candidate's) + HISTORY_WEIGHT x (its
# file's history evidence / the best file's) + RECENCY_WEIGHT x (its file's recent activity /
# the busiest candidate's); 0 turns a signal off.
HISTORY_WEIGHT = 0.4
RECENCY_WEIGHT = 0.1
RECENCY_COMMITS = 50  # "recent": the newest this many recorded commits
HISTORY_SIMILAR_COMMITS = 20  # most similar commit messages considered
HISTORY_MATCH_BUDGET = 2000  # commits a search may score (common words are left out first)
HISTORY_VOTE_CUTOFF = 0.5  # ... of which those scoring at least this share of the best vote
HISTORY_SIMILARITY_POWER = 2.0  # a vote is (score / best score) ** this
HISTORY_CHURN_POWER = 2.0  # a file's votes are divided by log(2 + commits touching it) ** this
HISTORY_MAX_COMMITS = 20000  # newest commits on HEAD recorded in the index

# A file's best block is raised by this x the final scores of its next two blocks (a file
# ranks by its best block; see ``file_evidence``), for queries of two words or more (one word
# is an editor's search for a name just typed); 0 turns it off.
FILE_NEXT_BLOCKS_WEIGHT = 0.05

# At most this many hits from one file before the others are pushed down the list.
GROUP_LIMIT = 3

# A query's identifier found verbatim in at most this many blocks (``verbatim``) multiplies
# their score by VERBATIM_WEIGHT (1.0 switches it off).
VERBATIM_MAX_BLOCKS = 3
VERBATIM_WEIGHT = 3.0
