"""The eight tools: results, strict validation and the one result envelope."""

from __future__ import annotations

import pytest

from pytest_agentfloor.sandbox import TOOL_SCHEMAS, Sandbox
from pytest_agentfloor.suite.schema import TOOL_NAMES, Fixtures

FIX = Fixtures.model_validate({
    "records": [
        {"id": "ITM-1A", "collection": "items", "name": "Blue widget", "tags": ["widget"],
         "fields": {"price": 12.5, "stock": 4, "colour": "blue", "labels": ["fragile"]}},
        {"id": "ITM-2B", "collection": "items", "name": "Red widget", "tags": ["widget"],
         "fields": {"price": 20, "stock": 0, "colour": "red", "labels": []}},
        {"id": "SUP-9Z", "collection": "suppliers", "name": "Widget Works", "fields": {"region": "east"}},
    ],
    "options": {"colours": ["blue", "red"]},
    "constraints": [
        {"name": "in_stock", "field": "stock", "op": ">", "value": 0},
        {"name": "cheap", "field": "price", "op": "<=", "value": 15},
        {"name": "not_fragile", "field": "labels", "op": "contains", "value": "fragile"},
    ],
    "failures": [{"tool": "lookup_record", "match": {"record_id": "SUP-9Z"}, "times": 1}],
    "submission": {"decisions": ["order", "skip"]},
})


@pytest.fixture
def box() -> Sandbox:
    return Sandbox(FIX, TOOL_NAMES)


def test_every_tool_has_a_strict_schema() -> None:
    assert sorted(TOOL_SCHEMAS) == sorted(TOOL_NAMES)
    for schema in TOOL_SCHEMAS.values():
        params = schema["function"]["parameters"]
        assert params["additionalProperties"] is False and params["required"]


def test_search_ranks_by_overlap_then_id_and_filters_collections(box: Sandbox) -> None:
    hits = box.call("search_records", {"query": "red widget"})["data"]
    assert [h["id"] for h in hits] == ["ITM-2B", "ITM-1A", "SUP-9Z"]
    assert [h["id"] for h in box.call("search_records", {"query": "widget", "collection": "Suppliers"})["data"]] == ["SUP-9Z"]
    missing = box.call("search_records", {"query": "widget", "collection": "nope"})
    assert missing["status"] == "not_found" and "items, suppliers" in missing["hint"]
    assert box.call("search_records", {"query": "zebra"})["status"] == "not_found"


def test_lookup_and_attribute(box: Sandbox) -> None:
    assert box.call("lookup_record", {"record_id": "itm-1a"})["data"]["price"] == 12.5
    assert box.call("get_attribute", {"record_id": "ITM-2B", "attribute": "stock"})["data"]["value"] == 0
    nf = box.call("get_attribute", {"record_id": "ITM-2B", "attribute": "weight"})
    assert nf["status"] == "not_found" and "price" in nf["hint"]
    assert box.call("lookup_record", {"record_id": "ITM-3C"})["status"] == "not_found"


def test_constraints(box: Sandbox) -> None:
    def sat(rid: str, con: str) -> bool:
        return box.call("check_constraint", {"record_id": rid, "constraint": con})["data"]["satisfied"]

    assert sat("ITM-1A", "in_stock") and not sat("ITM-2B", "in_stock")
    assert sat("ITM-1A", "cheap") and not sat("ITM-2B", "cheap")
    assert sat("ITM-1A", "not_fragile") and not sat("ITM-2B", "not_fragile")
    assert box.call("check_constraint", {"record_id": "ITM-1A", "constraint": "x"})["status"] == "not_found"


def test_compare_and_compute(box: Sandbox) -> None:
    cmp = box.call("compare_records", {"record_ids": ["ITM-1A", "ITM-2B"], "attribute": "price"})["data"]
    assert (cmp["highest"], cmp["lowest"]) == ("ITM-2B", "ITM-1A")
    assert box.call("compare_records", {"record_ids": ["ITM-1A"], "attribute": "price"})["status"] == "error"
    assert box.call("compare_records", {"record_ids": ["ITM-1A", "ITM-2B"], "attribute": "colour"})["error_type"] == "not_numeric"

    def compute(op: str, xs: list[float]):
        return box.call("compute_value", {"operation": op, "operands": xs})

    assert compute("sum", [1, 2, 3.5])["data"]["result"] == 6.5
    assert compute("difference", [10, 4])["data"]["result"] == 6
    assert compute("ratio", [1, 3])["data"]["result"] == pytest.approx(0.333333)
    assert compute("percent_change", [80, 100])["data"]["result"] == 25
    assert compute("ratio", [1, 0])["error_type"] == "division_by_zero"
    assert compute("difference", [1])["error_type"] == "invalid_arguments"
    assert compute("median", [1])["error_type"] == "invalid_arguments"


def test_strict_argument_validation(box: Sandbox) -> None:
    for args in ({}, {"record_id": 7}, {"record_id": "ITM-1A", "extra": 1}):
        result = box.call("lookup_record", args)
        assert result["status"] == "error" and result["error_type"] == "invalid_arguments"
    assert box.call("compute_value", {"operation": "sum", "operands": [True]})["error_type"] == "invalid_arguments"
    assert box.call("unlisted", {})["error_type"] == "unknown_tool"


def test_scripted_failure_fires_then_recovers(box: Sandbox) -> None:
    first = box.call("lookup_record", {"record_id": "SUP-9Z"})
    assert first["status"] == "error" and first["error_type"] == "unavailable" and first["hint"]
    assert box.call("lookup_record", {"record_id": "SUP-9Z"})["status"] == "ok"


def test_submission_is_the_only_state_change_and_is_validated(box: Sandbox) -> None:
    assert box.call("submit_decision", {"decision": "buy", "record_id": "ITM-1A"})["error_type"] == "invalid_decision"
    assert box.call("submit_decision", {"decision": "order"})["error_type"] == "invalid_arguments"
    assert box.call("submit_decision", {"decision": "order", "record_id": "ITM-1A", "evidence": ["NOPE"]})["status"] == "not_found"
    assert box.submissions == []
    ok = box.call("submit_decision", {"decision": "Order", "record_id": "itm-1a", "evidence": ["ITM-1A"]})
    assert ok["status"] == "ok"
    assert box.submissions == [{"decision": "Order", "record_id": "ITM-1A", "evidence": ["ITM-1A"], "note": ""}]
    assert box.call("submit_decision", {"decision": "skip", "record_id": "ITM-2B"})["error_type"] == "already_submitted"
    assert len(box.submissions) == 1


def test_unexposed_tool_is_unknown() -> None:
    box = Sandbox(FIX, ("lookup_record",))
    assert box.call("get_attribute", {"record_id": "ITM-1A", "attribute": "price"})["error_type"] == "unknown_tool"
