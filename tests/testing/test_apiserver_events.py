"""Events: core v1 and events.k8s.io/v1 are one resource, as on kube-apiserver v1.28.

Bodies measured on kube-apiserver: the fields each version renames, the
zero values Go writes for fields without ``omitempty``, Times in whole
seconds, MicroTimes with exactly six fractional digits, and the 422 causes
of ``ValidateEventCreate`` (core field names, a core ``Event`` kind).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from reconcilekit.testing import Cluster

NEW = "/apis/events.k8s.io/v1/namespaces/{ns}/events"
CORE = "/api/v1/namespaces/{ns}/events"
_SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "managedFields")


def _plain(obj: dict[str, Any]) -> dict[str, Any]:
    """An Event without what the server sets at random, and without its namespace."""
    meta = {k: v for k, v in obj["metadata"].items() if k not in _SERVER_SET}
    assert meta.pop("namespace")
    return dict(obj, metadata=meta)


def _new_event(ns: str, **fields: Any) -> dict[str, Any]:
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "n1"},
             "eventTime": "2024-01-02T04:04:05.123456+01:00",
             "reportingController": "example.com/ctl", "reportingInstance": "ctl-1",
             "action": "Reconcile", "reason": "Synced", "type": "Normal", "note": "hello",
             "regarding": {"kind": "ConfigMap", "namespace": ns, "name": "x",
                           "apiVersion": "v1", "uid": "u1"},
             "related": {"kind": "Secret", "namespace": ns, "name": "s"},
             "series": {"count": 2, "lastObservedTime": "2024-01-02T03:04:06.500000Z"}}
    for key, value in fields.items():
        if value is None:
            event.pop(key, None)
        else:
            event[key] = value
    return event


async def test_an_event_written_as_events_k8s_io_reads_as_core(apiserver: Cluster) -> None:
    ns = apiserver.namespace
    made = await apiserver.request("POST", NEW.format(ns=ns), json=_new_event(ns))
    assert made.status == 201, made
    regarding = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "namespace": ns,
                 "uid": "u1"}
    related = {"kind": "Secret", "name": "s", "namespace": ns}
    series = {"count": 2, "lastObservedTime": "2024-01-02T03:04:06.500000Z"}
    as_new = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "n1"},
              "action": "Reconcile", "deprecatedFirstTimestamp": None,
              "deprecatedLastTimestamp": None, "deprecatedSource": {},
              "eventTime": "2024-01-02T03:04:05.123456Z", "note": "hello", "reason": "Synced",
              "regarding": regarding, "related": related,
              "reportingController": "example.com/ctl", "reportingInstance": "ctl-1",
              "series": series, "type": "Normal"}
    assert _plain(made.body) == as_new
    core = await apiserver.request("GET", f"{CORE.format(ns=ns)}/n1")
    assert core.status == 200, core
    assert _plain(core.body) == {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "n1"}, "action": "Reconcile",
        "eventTime": "2024-01-02T03:04:05.123456Z", "firstTimestamp": None,
        "involvedObject": regarding, "lastTimestamp": None, "message": "hello",
        "reason": "Synced", "related": related, "reportingComponent": "example.com/ctl",
        "reportingInstance": "ctl-1", "series": series, "source": {}, "type": "Normal"}
    again = await apiserver.request("GET", f"{NEW.format(ns=ns)}/n1")
    assert _plain(again.body) == as_new


async def test_a_core_event_reads_as_events_k8s_io(apiserver: Cluster) -> None:
    ns = apiserver.namespace
    involved = {"kind": "ConfigMap", "namespace": ns, "name": "x"}
    async with apiserver.watch(NEW.format(ns=ns), {"resourceVersion": "0"}) as events:
        made = await apiserver.request("POST", CORE.format(ns=ns), json={
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": "c1"},
            "involvedObject": involved, "reason": "Made", "message": "m", "type": "Normal",
            "count": 3, "firstTimestamp": "2024-01-02T03:04:05.7Z",
            "lastTimestamp": "2024-01-02T04:04:07+01:00",
            "source": {"component": "comp", "host": "h"}})
        assert made.status == 201, made
        assert _plain(made.body) == {
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": "c1"}, "count": 3,
            "eventTime": None, "firstTimestamp": "2024-01-02T03:04:05Z",
            "involvedObject": involved, "lastTimestamp": "2024-01-02T03:04:07Z",
            "message": "m", "reason": "Made", "reportingComponent": "",
            "reportingInstance": "", "source": {"component": "comp", "host": "h"},
            "type": "Normal"}
        as_new = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
                  "metadata": {"name": "c1"}, "deprecatedCount": 3,
                  "deprecatedFirstTimestamp": "2024-01-02T03:04:05Z",
                  "deprecatedLastTimestamp": "2024-01-02T03:04:07Z",
                  "deprecatedSource": {"component": "comp", "host": "h"}, "eventTime": None,
                  "note": "m", "reason": "Made", "regarding": involved, "type": "Normal"}
        got = await apiserver.request("GET", f"{NEW.format(ns=ns)}/c1")
        assert _plain(got.body) == as_new
        with anyio.fail_after(30):
            async for event in events:
                if event["object"]["metadata"]["name"] == "c1":
                    assert event["type"] == "ADDED"
                    assert _plain(event["object"]) == as_new
                    break
    listed = await apiserver.request("GET", NEW.format(ns=ns))
    assert listed.body["kind"] == "EventList"
    assert "c1" in [e["metadata"]["name"] for e in listed.body["items"]]
    # an update through events.k8s.io/v1 is held to the legacy rules only: no eventTime needed
    labelled = await apiserver.request(
        "PATCH", f"{NEW.format(ns=ns)}/c1", json={"metadata": {"labels": {"a": "b"}}},
        content_type="application/merge-patch+json")
    assert labelled.status == 200, labelled
    assert labelled.body["metadata"]["labels"] == {"a": "b"}
    assert labelled.body["eventTime"] is None


def _causes(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]



@pytest.mark.parametrize(("fields", "causes"), [
    ({"eventTime": None}, [("FieldValueRequired", "eventTime", "Required value")]),
    ({"reportingInstance": None},
     [("FieldValueRequired", "reportingInstance", "Required value")]),
    ({"action": None}, [("FieldValueRequired", "action", "Required value")]),
    ({"reason": None}, [("FieldValueRequired", "reason", "Required value")]),
    ({"type": "Bad"},
     [("FieldValueInvalid", "type", 'Invalid value: "": has invalid value: Bad')]),
    ({"note": "x" * 1025}, [("FieldValueInvalid", "message",
                             'Invalid value: "": can have at most 1024 characters')]),
    ({"series": {"count": 1, "lastObservedTime": "2024-01-02T03:04:06.000000Z"}},
     [("FieldValueInvalid", "series.count", 'Invalid value: "": should be at least 2')]),
    ({"deprecatedFirstTimestamp": "2024-01-02T03:04:05Z",
      "deprecatedLastTimestamp": "2024-01-02T03:04:05Z", "deprecatedCount": 2,
      "deprecatedSource": {"component": "c"}, "series": {"count": 2}},
     [("FieldValueRequired", "series.lastObservedTime", "Required value"),
      *[("FieldValueInvalid", core, 'Invalid value: "": needs to be unset')
        for core in ("firstTimestamp", "lastTimestamp", "count", "source")]]),
])
async def test_events_k8s_io_refuses_invalid_events(apiserver: Cluster, fields: dict[str, Any],
                                                    causes: list[tuple[str, str, str]]) -> None:
    ns = apiserver.namespace
    refused = await apiserver.request("POST", NEW.format(ns=ns), json=_new_event(ns, **fields))
    assert refused.status == 422, refused
    assert _causes(refused.body) == causes
    # validated as the core kind: no group in the details
    assert refused.body["details"] == {"name": "n1", "kind": "Event",
                                       "causes": refused.body["details"]["causes"]}
    assert refused.body["message"].startswith('Event "n1" is invalid: ')


async def test_core_events_rules(apiserver: Cluster) -> None:
    ns = apiserver.namespace
    elsewhere = await apiserver.request("POST", CORE.format(ns=ns), json={
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "c2"},
        "involvedObject": {"namespace": "other"}})
    assert elsewhere.status == 422, elsewhere
    assert _causes(elsewhere.body) == [("FieldValueInvalid", "involvedObject.namespace",
                                        'Invalid value: "other": does not match event.namespace')]
    # with an eventTime, the reporting fields are required
    refused = await apiserver.request("POST", CORE.format(ns=ns), json={
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "c3"},
        "involvedObject": {"namespace": ns}, "eventTime": "2024-01-02T03:04:05.000000Z"})
    assert refused.status == 422, refused
    regex = ("Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' "
             "or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
             "'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
    assert _causes(refused.body) == [
        ("FieldValueRequired", "reportingComponent", "Required value"),
        ("FieldValueInvalid", "reportingComponent",
         'Invalid value: "": name part must be non-empty'),
        ("FieldValueInvalid", "reportingComponent", regex),
        ("FieldValueRequired", "reportingInstance", "Required value"),
        ("FieldValueRequired", "action", "Required value"),
        ("FieldValueRequired", "reason", "Required value")]


async def test_micro_times_need_six_fractional_digits(apiserver: Cluster) -> None:
    ns = apiserver.namespace
    refused = await apiserver.request("POST", NEW.format(ns=ns), json=_new_event(
        ns, series={"count": 2, "lastObservedTime": "2024-01-02T03:04:06.5Z"}))
    assert refused.status == 400, refused
    assert refused.body["message"] == (
        'Event in version "v1" cannot be handled as a Event: parsing time '
        '"2024-01-02T03:04:06.5Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".5Z" '
        'as ".000000"')


async def test_an_events_k8s_io_update_may_not_change_what_was_observed(
        apiserver: Cluster) -> None:
    """``ValidateEventUpdate``: through events.k8s.io/v1, every field but the series and
    the metadata is immutable; each refusal names the core field and shows the new value
    as Go renders it (``reason`` is checked twice, so named twice). Measured on v1.28.7."""
    ns = apiserver.namespace
    made = await apiserver.request("POST", NEW.format(ns=ns), json=_new_event(ns))
    assert made.status == 201, made
    path = NEW.format(ns=ns) + "/n1"
    reference = (f'core.ObjectReference{{Kind:"ConfigMap", Namespace:"{ns}", Name:"y", '
                 'UID:"u1", APIVersion:"v1", ResourceVersion:"", FieldPath:""}')
    for change, refused in [
            ({"reason": "Other"}, [("reason", '"Other"'), ("reason", '"Other"')]),
            ({"note": "changed"}, [("message", '"changed"')]),
            ({"type": "Warning"}, [("type", '"Warning"')]),
            ({"regarding": dict(made.body["regarding"], name="y")},
             [("involvedObject", reference)]),
            ({"action": "Other"}, [("action", '"Other"')]),
            ({"reportingInstance": "ctl-2"}, [("reportingInstance", '"ctl-2"')]),
            ({"reportingController": "example.com/other"},
             [("reportingController", '"example.com/other"')]),
            ({"eventTime": "2024-01-02T03:05:05.123456Z"},
             [("eventTime", "2024-01-02 03:05:05.123456 +0000 UTC")]),
            ({"related": None}, [("related", '"null"')])]:
        body = {k: v for k, v in {**made.body, **change}.items() if v is not None}
        got = await apiserver.request("PUT", path, json=body)
        assert got.status == 422, (change, got)
        assert [(c["field"], c["message"]) for c in got.body["details"]["causes"]] == [
            (field, f"Invalid value: {value}: field is immutable") for field, value in refused]
    series = dict(made.body,
                  series={"count": 5, "lastObservedTime": "2024-01-02T03:09:06.000000Z"})
    assert (await apiserver.request("PUT", path, json=series)).status == 200  # a series may grow
