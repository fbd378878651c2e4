"""One vocabulary (prereg/core/vocabulary.py): what a pre-registration may name is what the engine runs."""

from __future__ import annotations

from pathlib import Path

from prereg.core import vocabulary as v


def test_the_engine_uses_the_documents_lists():
    from engine.cli.parser import build_parser
    from engine.policies import base, factory
    from engine.policies import molmoact2 as m2
    from engine.policies.convmap import shim as convmap

    assert base.JOINT_NAMES is v.JOINT_NAMES and convmap.PRESET_NAMES is v.CONVMAPS and m2.DTYPES is v.DTYPES
    assert set(v.POLICIES) <= set(factory.POLICY_KINDS) and set(factory.POLICY_KINDS) - set(v.POLICIES) == {"hold"}
    assert set(factory.DECODES) == {d for ds in v.DECODES.values() for d in ds}
    assert m2.DECODES["flow"] == v.DECODES["molmoact2"] and m2.DECODES["discrete"] == v.DECODES["molmoact2-discrete"]
    choices = {a.dest: a.choices for a in build_parser()._actions if a.choices}
    assert tuple(choices["dtype"]) == v.DTYPES and tuple(choices["convmap"]) == v.CONVMAPS


def test_which_decodes_a_pathway_allows_is_said_in_one_place():
    """The document's check, the policy factory and the MolmoAct2 loader each wrote the rule and its
    words (three copies); they now ask prereg.core.vocabulary.decode_problem."""
    from prereg.core.vocabulary import decode_problem

    assert decode_problem("molmoact2", "reference") == "the flow pathway (molmoact2) decodes with flow, not 'reference'"
    assert decode_problem("molmoact2-discrete", "flow") == (
        "the discrete pathway (molmoact2-discrete) decodes with reference or grammar-masked, not 'flow'")
    assert decode_problem("molmoact2-discrete", "grammar-masked") is None and decode_problem("scripted", None) is None
    repo = Path(__file__).resolve().parent.parent
    said = [str(p.relative_to(repo)) for package in ("engine", "console", "prereg") for p in (repo / package).rglob("*.py")
            if "decodes with" in p.read_text(encoding="utf-8") or "is not a decode of" in p.read_text(encoding="utf-8")]
    assert said == ["prereg/core/vocabulary.py"]
    for module in ("engine/policies/factory.py", "engine/policies/molmoact2/__init__.py", "prereg/document/check_arms.py"):
        assert "decode_problem(" in (repo / module).read_text(encoding="utf-8"), module
