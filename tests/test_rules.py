"""The map of each rule's copies (sparktide.rules) is true and is what the design shows."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from sparktide.rules import RULES, SHARED, rule_table

DOCS = Path(__file__).parent.parent / "docs"


def _resolve(dotted: str) -> object:
    module_name, _, qualified = dotted.partition(":")
    target: object = importlib.import_module(module_name)
    for part in qualified.split("."):
        target = getattr(target, part)
    return target


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.rule)
def test_every_copy_of_a_rule_exists(rule):
    assert rule.python, f"{rule.rule}: the reference engine defines every rule"
    for dotted in rule.copies():
        assert callable(_resolve(dotted)), dotted


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.rule)
def test_every_copy_of_a_rule_carries_its_name(rule):
    for dotted in rule.copies():
        if dotted in SHARED:
            continue
        name = dotted.rpartition(":")[2].rpartition(".")[2]
        assert name.startswith(rule.name), f"{rule.rule}: {dotted} is not named {rule.name}"


def test_a_copy_that_holds_several_rules_is_listed_once_with_why():
    for dotted, why in SHARED.items():
        assert callable(_resolve(dotted)) and why
        assert sum(dotted in rule.copies() for rule in RULES) > 1, dotted


def test_the_design_shows_the_rule_table_as_the_code_has_it():
    design = (DOCS / "design.md").read_text(encoding="utf-8")
    assert rule_table() in design, "docs/design.md: paste sparktide.rules.rule_table()"


def test_every_rule_cites_a_section_of_the_semantics():
    headings = re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", (DOCS / "semantics.md").read_text(), re.M)
    for rule in RULES:
        for section in re.findall(r"§(\d+(?:\.\d+)?)", rule.section):
            assert section in headings, f"{rule.rule}: no section {section} in semantics.md"


def test_a_renamed_copy_is_found_missing():
    with pytest.raises(AttributeError):
        _resolve("sparktide.core.policy:OrderingPolicy.no_such_rule")
