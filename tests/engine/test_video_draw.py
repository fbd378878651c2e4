"""Which episodes are filmed (--video-draw), without running any."""

from types import SimpleNamespace

from engine.pool import VIDEO_ALL_UP_TO, LocalPool


def filmed(draw, n_seeds, started, seed=0):
    pool = SimpleNamespace(cfg=SimpleNamespace(video_draw=draw, seeds=list(range(n_seeds))))
    return LocalPool._film(pool, SimpleNamespace(episodes_started=started), seed)


def test_auto_films_every_seed_of_a_small_run_and_the_first_episode_per_worker_of_a_big_one():
    assert filmed("auto", VIDEO_ALL_UP_TO, started=7)
    assert not filmed("auto", VIDEO_ALL_UP_TO + 1, started=7)
    assert filmed("auto", VIDEO_ALL_UP_TO + 1, started=0)


def test_the_other_draws_are_unchanged():
    assert filmed("0", 10, started=0) and not filmed("0", 10, started=1)
    assert filmed("all", 10_000, started=9) and not filmed("none", 3, started=0)
    assert filmed("seeds:4,9", 10, started=5, seed=9) and not filmed("seeds:4,9", 10, started=0, seed=3)


def test_the_cli_default_is_auto():
    from engine.cli import build_parser

    assert build_parser().parse_args(["--policy", "hold"]).video_draw == "auto"
