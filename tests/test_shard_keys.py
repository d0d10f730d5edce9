"""Shard keys and selectors: FNV-1a as Kubernetes hashes, shardRange selectors read and written."""

from __future__ import annotations

import pytest

from reconcilekit import ShardSelector, ShardSelectorError, fnv1a64, shard_key
from reconcilekit._shard_selector import KEY_SPACE

UID = "object.metadata.uid"


def test_fnv1a64_matches_the_reference_vectors() -> None:
    assert fnv1a64("") == 0xCBF29CE484222325
    assert fnv1a64("a") == 0xAF63DC4C8601EC8C
    assert fnv1a64("foobar") == 0x85944171F73967E8


def test_the_key_of_an_object_hashes_its_uid_or_namespace() -> None:
    obj = {"metadata": {"uid": "1f0c", "namespace": "team-a"}}
    assert shard_key(obj) == fnv1a64("1f0c")
    assert shard_key(obj, "object.metadata.namespace") == fnv1a64("team-a")
    assert shard_key({"metadata": {}}, "object.metadata.namespace") == fnv1a64("")


def test_selectors_print_as_the_api_server_reads_them_and_parse_back() -> None:
    half = ShardSelector.of(UID, [(0, 1 << 63)])
    assert str(half) == ("shardRange(object.metadata.uid, '0x0000000000000000', "
                         "'0x8000000000000000')")
    whole = ShardSelector.of(UID, [(1 << 63, KEY_SPACE), (0, 1 << 63)])
    assert whole.ranges == ((0, KEY_SPACE),) and whole.everything
    assert str(whole).endswith("'0x10000000000000000')")
    two = ShardSelector.of(UID, [(0, 16), (32, 48)])
    assert ShardSelector.parse(str(two)) == two
    assert ShardSelector.parse(
        "shardRange(object.metadata.uid, '0x0', '0x10') || "
        "shardRange(object.metadata.uid, '0x10', '0x20')") == ShardSelector.of(UID, [(0, 32)])
    assert two.matches_key(15) and not two.matches_key(16) and two.matches_key(32)


@pytest.mark.parametrize(("text", "problem"), [
    ("", "the shard selector is empty"),
    ("shardRange(object.metadata.name, '0x0', '0x1')",
     "field 'object.metadata.name' cannot be sharded on"),
    ("shardRange(object.metadata.uid, '0x10', '0x1')", "start 0x10 is not below its end 0x1"),
    ("shardRange(object.metadata.uid, '0xG', '0x1')", "must be a 0x-prefixed lowercase hex"),
    ("shardRange(object.metadata.uid, '0x0', '0x20000000000000000')", "above 0x1000"),
    ("shardRange(object.metadata.uid, '0x0', '0x1') && true", "is not shardRange("),
    ("shardRange(object.metadata.uid, '0x0', '0x1') || "
     "shardRange(object.metadata.namespace, '0x1', '0x2')", "hashes one field"),
])
def test_a_bad_selector_is_refused_naming_the_problem(text: str, problem: str) -> None:
    with pytest.raises(ShardSelectorError, match=problem.replace("(", r"\(")):
        ShardSelector.parse(text)
