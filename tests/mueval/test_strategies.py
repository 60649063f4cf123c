"""The strategy registry: the records, registration's refusals, and what reads the records."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mueval.data.table import table_from_frame
from mueval.errors import SplitError, UsageError
from mueval.evaluation.aggregate import splits_frame
from mueval.evaluation.records import EvalConfig, Split
from mueval.evaluation.runner import run
from mueval.evaluation.splits import make_splits
from mueval.guarantees.user_level import default_combine, has_verdict
from mueval.guarantees.verdict_settings import no_verdict_reason, verdict_settings
from mueval.names import (
    STRATEGIES,
    STRATEGY_ALIASES,
    STRATEGY_NAMES,
    is_pooled,
    ordered_strategies,
    parse_strategies,
    strategy_name,
)
from mueval.strategies import (
    BUILTIN_STRATEGIES,
    Strategy,
    get_strategy,
    load_strategy,
    register_strategy,
    registered_strategies,
    unregister_strategy,
)
from tests.user_tables import make_frame


def _first_user(request) -> list[Split]:
    """Test on the first user's rows, calibrate on the second's, train on the rest."""
    users = np.unique(request.users).tolist()
    test = np.flatnonzero(request.users == users[0])
    cal = np.flatnonzero(request.users == users[1])
    train = np.flatnonzero(~np.isin(request.users, users[:2]))
    cals = dict.fromkeys(request.strategies, cal)
    return [Split(request.iteration, request.seed, users[0], train, test, cals)]


TOY = Strategy("toy", "Toy (first user)", "tests on the first user.", _first_user)


@pytest.fixture
def toy():
    """The toy strategy registered for one test."""
    record = register_strategy(TOY)
    try:
        yield record
    finally:
        for code in [s.code for s in registered_strategies()]:
            if code not in STRATEGIES:
                unregister_strategy(code)


def _table() -> tuple[np.ndarray, np.ndarray]:
    # Rows 0-9 are user 3's, 10-19 user 1's, 20-29 user 2's.
    users = np.repeat([3, 1, 2], 10)
    y = np.tile([0, 1], 15)
    return y, users


def test_the_built_in_records_give_the_names_the_protocol_uses() -> None:
    # Written out by hand: the codes, order, aliases and names runs have always had.
    assert STRATEGIES == ("mm", "udm", "uim", "ucm", "uam", "uxc", "ukm")
    assert STRATEGY_ALIASES == {
        "mixed": "mm",
        "ud": "udm",
        "ui": "uim",
        "uc": "ucm",
        "ua": "uam",
        "ux": "uxc",
        "uk": "ukm",
    }
    assert STRATEGY_NAMES["ucm"] == "UCM (user-calibrated)"
    assert [s.code for s in registered_strategies()] == list(STRATEGIES)
    # The per-user verdict rules of docs/per-user-guarantees.md.
    combines = {s: default_combine(s) for s in STRATEGIES}
    assert combines == {
        "mm": "bonferroni",
        "udm": "convolution",
        "uim": "bonferroni",
        "ucm": "convolution",
        "uam": "convolution",
        "uxc": "bonferroni",
        "ukm": "bonferroni",
    }
    assert {s for s in STRATEGIES if not has_verdict(s)} == {"uxc", "ukm"}
    assert {s for s in STRATEGIES if is_pooled(s)} == {"mm"}
    # UIM, UCM and UKM name one splitter, so one split serves all three.
    assert get_strategy("uim").splitter == get_strategy("ucm").splitter
    assert get_strategy("ukm").splitter == get_strategy("ucm").splitter
    assert len({s.splitter for s in BUILTIN_STRATEGIES}) == 5


def test_every_built_in_splitter_resolves_to_a_function() -> None:
    for record in BUILTIN_STRATEGIES:
        assert callable(record.split_function()), record.code


def test_a_registered_strategy_is_parsed_ordered_named_and_split(toy: Strategy) -> None:
    assert parse_strategies(["toy,ucm"]) == ["ucm", "toy"]
    assert parse_strategies([toy, "mm"]) == ["mm", "toy"]
    assert parse_strategies(["all"]) == list(STRATEGIES)  # 'all' stays the built-ins
    # A run folder's codes, registered here or not; no code that breaks the rule.
    assert parse_strategies(["zz,toy"], extra={"zz", "toy", "../x"}) == ["toy", "zz"]
    with pytest.raises(UsageError, match="unknown strategy '../x'"):
        parse_strategies(["../x"], extra={"../x"})
    assert ordered_strategies(["toy", "zz", "mm"]) == ["mm", "toy", "zz"]
    assert strategy_name("toy") == "Toy (first user)"
    assert default_combine("toy") == "bonferroni"
    assert no_verdict_reason("toy", verdict_settings({})) is None
    y, users = _table()
    splits = make_splits(y, users, ["mm", "toy", "ucm"], 1, 101)
    # Report order: MM, then UCM's three users, then the toy's one split.
    assert [s.strategies for s in splits] == [["mm"], ["ucm"], ["ucm"], ["ucm"], ["toy"]]
    (mine,) = splits[4:]
    assert mine.user == 1
    assert sorted(mine.test.tolist()) == np.flatnonzero(users == 1).tolist()
    assert sorted(mine.calibrations["toy"].tolist()) == np.flatnonzero(users == 2).tolist()


def test_two_records_on_one_splitter_share_its_splits(toy: Strategy) -> None:
    calls = []

    def counted(request):
        calls.append(request.strategies)
        return _first_user(request)

    register_strategy(Strategy("ta", "A", "a.", counted))
    register_strategy(Strategy("tb", "B", "b.", counted))
    (split,) = make_splits(*_table(), ["tb", "ta"], 1, 101)
    assert calls == [("ta", "tb")]
    assert split.strategies == ["ta", "tb"]


def test_a_folders_strategy_records_say_which_have_no_verdict() -> None:
    # As a report or comparison reads a run folder made with strategies this
    # process never registered; a built-in's record is never the folder's.
    records = {"nov": {"no_verdict": "pooled p-values"}, "ucm": {"no_verdict": "forged"}}
    settings = verdict_settings({"strategy_records": records})
    assert no_verdict_reason("nov", settings) == "nov: pooled p-values"
    assert no_verdict_reason("ucm", settings) is None
    assert no_verdict_reason("other", settings) is None
    for bad in ([], "x", {"nov": "text"}, {"nov": {"no_verdict": 3}}):
        assert no_verdict_reason("nov", verdict_settings({"strategy_records": bad})) is None


def test_a_strategy_without_a_verdict_says_why(toy: Strategy) -> None:
    record = Strategy("nov", "No verdict", "pools.", _first_user, no_verdict="pooled p-values")
    register_strategy(record)
    assert not has_verdict("nov")
    assert no_verdict_reason("nov", verdict_settings({})) == "nov: pooled p-values"


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"code": "All"}, "must be 1 to 16 lower-case"),
        ({"code": "all"}, "reserved"),
        ({"code": "a" * 17}, "must be 1 to 16"),
        ({"code": "../x"}, "must be 1 to 16"),
        ({"name": ""}, "name must be one non-empty line"),
        ({"help": "two\nlines"}, "help must be one non-empty line"),
        ({"splitter": 3}, "splitter must be a function"),
        ({"combine": "sum"}, "combine must be one of convolution, bonferroni"),
        ({"no_verdict": ""}, "no_verdict must be None or the reason"),
        ({"aliases": ("OK",)}, "alias 'OK'"),
        ({"pooled": "yes"}, "pooled must be True or False"),
    ],
)
def test_a_bad_record_is_refused_naming_the_field(fields: dict, match: str) -> None:
    base = {"code": "bad", "name": "Bad", "help": "bad.", "splitter": _first_user}
    with pytest.raises(UsageError, match=match):
        Strategy(**{**base, **fields})


def test_registration_refuses_clashes_and_built_ins(toy: Strategy) -> None:
    with pytest.raises(UsageError, match="'ucm' is built in and cannot be replaced"):
        register_strategy(Strategy("ucm", "Mine", "mine.", _first_user))
    with pytest.raises(UsageError, match="registered already"):
        register_strategy(Strategy("toy", "Other", "other.", _first_user))
    with pytest.raises(UsageError, match="the name 'mixed' is taken by strategy 'mm'"):
        register_strategy(Strategy("mine", "Mine", "mine.", _first_user, aliases=("mixed",)))
    with pytest.raises(UsageError, match="the name 'toy' is taken by strategy 'toy'"):
        register_strategy(Strategy("mine", "Mine", "mine.", _first_user, aliases=("toy",)))
    with pytest.raises(UsageError, match="takes a mueval.strategies.Strategy record"):
        register_strategy("toy")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="cannot be removed"):
        unregister_strategy("mm")
    assert register_strategy(TOY) is toy  # the same record again: nothing changes
    other = Strategy("toy", "Other", "other.", _first_user)
    assert register_strategy(other, replace=True) is other
    assert strategy_name("toy") == "Other"


def test_an_import_path_names_a_strategy_record(toy: Strategy) -> None:
    assert load_strategy("tests.mueval.test_strategies:TOY") == TOY
    assert parse_strategies(["mm,tests.mueval.test_strategies:TOY"]) == ["mm", "toy"]
    with pytest.raises(UsageError, match="is a function, not a mueval.strategies.Strategy"):
        load_strategy("tests.mueval.test_strategies:_table")
    with pytest.raises(UsageError, match="has no attribute 'NOPE'"):
        load_strategy("tests.mueval.test_strategies:NOPE")
    with pytest.raises(UsageError, match="cannot import 'no_such_module_here'"):
        load_strategy("no_such_module_here:X")
    record = Strategy("path", "Path", "by path.", "tests.mueval.test_strategies:TOY")
    with pytest.raises(UsageError, match="is a Strategy, not a function"):
        record.split_function()


def _bad_splitter(kind: str):
    def splitter(request):
        y_rows = len(request.y)
        train, test, cal = np.arange(0, 10), np.arange(10, 20), np.arange(20, 30)
        if kind == "overlap":
            cal = np.arange(15, 25)
        elif kind == "range":
            test = np.arange(25, y_rows + 1)
        elif kind == "empty":
            test = np.zeros(0, dtype=int)
        elif kind == "floats":
            test = test.astype(float)
        elif kind == "code":
            return [Split(request.iteration, request.seed, 1, train, test, {"other": cal})]
        elif kind == "type":
            return (Split(request.iteration, request.seed, 1, train, test, {"bad": cal}),)
        elif kind == "user":
            return [Split(request.iteration, request.seed, 2, train, test, {"bad": cal})]
        elif kind == "none":
            return [Split(request.iteration, request.seed, None, train, test, {"bad": cal})]
        return [Split(request.iteration, request.seed, 1, train, test, {"bad": cal})]

    return splitter


@pytest.mark.parametrize(
    ("kind", "match"),
    [
        ("overlap", "row 15 is in both test and bad"),
        ("range", "test must hold distinct row positions from 0 to 29"),
        ("empty", "test must be a non-empty 1-D array"),
        ("floats", "test must be a non-empty 1-D array of row positions"),
        ("code", r"calibrates \['other'\], expected one calibration set for each of \['bad'\]"),
        ("type", "must return a list of mueval.evaluation.records.Split"),
        ("user", "target user 2 is tested on rows of user 1; a strategy tests each target"),
        ("none", "names no target user, but the record says pooled=False"),
    ],
)
def test_a_splitter_of_the_users_is_checked_before_any_fit(toy, kind: str, match: str) -> None:
    register_strategy(Strategy("bad", "Bad", "bad.", _bad_splitter(kind)))
    with pytest.raises(SplitError, match=f"strategy 'bad': splitter.*{match}"):
        make_splits(*_table(), ["bad"], 1, 101)


def test_an_unknown_strategy_code_is_refused_by_make_splits() -> None:
    with pytest.raises(UsageError, match="unknown strategy 'nope'; registered: mm, udm"):
        make_splits(*_table(), ["nope"], 1, 101)


def _next_user(request) -> list[Split]:
    """Each user tested on its rows, calibrated on the next user's, trained on the rest."""
    users = np.unique(request.users).tolist()
    out = []
    for k, user in enumerate(users):
        buddy = users[(k + 1) % len(users)]
        test = np.flatnonzero(request.users == user)
        cal = np.flatnonzero(request.users == buddy)
        train = np.flatnonzero(~np.isin(request.users, [user, buddy]))
        out.append(Split(request.iteration, request.seed, user, train, test, {"nxt": cal}))
    return out


@pytest.mark.slow
def test_a_strategy_of_the_users_gives_the_same_results_for_any_jobs_and_dask(toy) -> None:
    # The splits are made in this process: worker processes, which never import
    # the module that registered the strategy, get them whole.
    pytest.importorskip("distributed")
    register_strategy(Strategy("nxt", "Next user", "calibrates on the next user.", _next_user))
    table = table_from_frame(make_frame())
    config = EvalConfig(strategies=("ucm", "nxt"), classifiers=("nb", "rf"), iterations=2)
    args = (table.X, table.y, table.users, table.classes, config)
    outs = [
        run(*args, jobs=1, progress=False),
        run(*args, jobs=2, progress=False),
        run(*args, backend="dask", workers=2, progress=False),
    ]
    frames = [splits_frame(o.results) for o in outs]
    assert set(frames[0]["strategy"]) == {"ucm", "nxt"}
    assert len(frames[0][frames[0]["strategy"] == "nxt"]) == 2 * 2 * 4
    for other, frame in zip(outs[1:], frames[1:], strict=True):
        pd.testing.assert_frame_equal(frames[0], frame)
        for a, b in zip(outs[0].results, other.results, strict=True):
            assert np.array_equal(a.sets, b.sets) and np.array_equal(a.pvalues, b.pvalues)
