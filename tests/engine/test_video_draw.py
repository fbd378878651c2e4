"""Which episodes are filmed (video_draw), without running any: one grammar for the document's
protocol and the flag (prereg.core.video_draw), one rule the pool applies."""

from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.workers.pool import LocalPool
from prereg.core.video_draw import VIDEO_ALL_UP_TO, parse_video_draw


def filmed(draw, n_seeds, started, seed=0):
    pool = SimpleNamespace(cfg=SimpleNamespace(video_draw=draw, seeds=list(range(n_seeds))))
    return LocalPool._film(pool, SimpleNamespace(episodes_started=started), seed)


def test_auto_films_every_seed_of_a_small_run_and_the_first_episode_per_worker_of_a_big_one():
    assert filmed("auto", VIDEO_ALL_UP_TO, started=7)
    assert not filmed("auto", VIDEO_ALL_UP_TO + 1, started=7)
    assert filmed("auto", VIDEO_ALL_UP_TO + 1, started=0)


def test_the_other_draws_are_unchanged():
    assert filmed("0", 10, started=0) and not filmed("0", 10, started=1)
    assert filmed("all", 10_000, started=9) and not filmed("none", 3, started=0) and not filmed("off", 3, started=0)
    assert filmed("seeds:4,9", 10, started=5, seed=9) and not filmed("seeds:4,9", 10, started=0, seed=3)


def test_the_cli_default_is_auto():
    from engine.cli.parser import build_parser

    assert build_parser().parse_args(["--policy", "hold"]).video_draw == "auto"


@pytest.mark.parametrize("value, written", [
    (0, "0"), ("0", "0"), ("auto", "auto"), (" AUTO ", "auto"), ("none", "none"), ("off", "none"), ("all", "all"),
    ("seeds:6, 28", "seeds:6,28"), ("seeds:007", "seeds:7"),
])
def test_one_written_form(value, written):
    assert parse_video_draw(value) == written


@pytest.mark.parametrize("value, said", [
    (3, "only 0 is a number"), (True, "not a video draw"), (None, "not a video draw"), ("sometimes", "not a video draw"),
    ("seeds:", "whole seed numbers"), ("seeds:a,b", "whole seed numbers"), ("seeds:-1", "whole seed numbers"),
    (1.5, "not a video draw"), ([0], "not a video draw"),
])
def test_what_is_refused_and_why(value, said):
    with pytest.raises(ValueError, match=said):
        parse_video_draw(value)


@given(st.one_of(st.integers(), st.text(max_size=20), st.booleans(), st.none(), st.floats()))
def test_any_value_is_a_draw_or_a_clear_refusal(value):
    try:
        written = parse_video_draw(value)
    except ValueError as exc:
        assert "video draw" in str(exc) or "seeds:" in str(exc)
    else:
        assert parse_video_draw(written) == written  # the written form reads back as itself


def test_a_document_and_the_flag_agree(tmp_path):
    """A value the document accepts is one the flag accepts, and the other way round."""
    from engine.cli.resolve import check_video_draw
    from prereg.core.errors import UsageError

    for value in ("auto", "0", "none", "all", "seeds:1,2", "3", "sometimes"):
        try:
            doc = parse_video_draw(int(value) if value.isdigit() else value)
        except ValueError:
            doc = None
        try:
            flag = check_video_draw(value)
        except UsageError:
            flag = None
        assert doc == flag, value
