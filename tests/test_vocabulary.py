"""One vocabulary (prereg/core/vocabulary.py): what a pre-registration may name is what the engine runs."""

from __future__ import annotations

from prereg.core import vocabulary as v


def test_the_engine_uses_the_documents_lists():
    from engine.cli_parser import build_parser
    from engine.policies import base, convmap, factory
    from engine.policies import molmoact2 as m2

    assert base.JOINT_NAMES is v.JOINT_NAMES and convmap.PRESET_NAMES is v.CONVMAPS and m2.DTYPES is v.DTYPES
    assert set(v.POLICIES) <= set(factory.POLICY_KINDS) and set(factory.POLICY_KINDS) - set(v.POLICIES) == {"hold"}
    assert set(factory.DECODES) == {d for ds in v.DECODES.values() for d in ds}
    assert m2.DECODES["flow"] == v.DECODES["molmoact2"] and m2.DECODES["discrete"] == v.DECODES["molmoact2-discrete"]
    choices = {a.dest: a.choices for a in build_parser()._actions if a.choices}
    assert tuple(choices["dtype"]) == v.DTYPES and tuple(choices["convmap"]) == v.CONVMAPS
