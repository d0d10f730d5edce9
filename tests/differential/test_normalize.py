"""Unit tests of the differential corpus's normalization, session loading and comparison
(no server: a fake kubectl stands in where one is run)."""

from __future__ import annotations

from pathlib import Path

import pytest
from differential_harness import (
    SERVER_GENERATED,
    Server,
    Session,
    SessionMismatch,
    Step,
    load_sessions,
    run_session,
)
from differential_normalize import normalize, normalize_tables

NS = "rk-test-0a1b2c3d"


def test_the_namespace_and_the_server_address_are_replaced() -> None:
    text = (f'Error from server (NotFound): configmaps "x" not found in {NS}\n'
            "The connection to the server https://127.0.0.1:44321 was refused")
    assert normalize(text, NS) == (
        'Error from server (NotFound): configmaps "x" not found in <NS>\n'
        "The connection to the server <SERVER> was refused")


def test_object_identity_and_times_are_replaced_in_yaml_and_json() -> None:
    text = ("metadata:\n"
            '  creationTimestamp: "2026-11-28T17:30:00Z"\n'
            '  resourceVersion: "1234"\n'
            "  uid: 6f1c2e0a-1b2c-4d5e-8f90-a1b2c3d4e5f6\n"
            '  managedFields:\n  - time: "2026-11-28T17:30:01Z"\n'
            '{"resourceVersion": "99", "lastTransitionTime": "2026-11-28T17:30:00.123456Z"}')
    assert normalize(text, NS) == (
        "metadata:\n"
        '  creationTimestamp: "<TIME>"\n'
        '  resourceVersion: "<RV>"\n'
        "  uid: <UID>\n"
        '  managedFields:\n  - time: "<TIME>"\n'
        '{"resourceVersion": "<RV>", "lastTransitionTime": "<TIME>"}')


def test_describe_output_has_its_times_and_resource_version_replaced() -> None:
    text = ("Creation Timestamp:  Sat, 28 Nov 2026 17:30:00 +0000\n"
            "  Resource Version:    989\n"
            "Generation:          1\n")
    assert normalize(text, NS) == ("Creation Timestamp:  <TIME>\n"
                                   "  Resource Version:    <RV>\n"
                                   "Generation:          1\n")


def test_cluster_ips_of_the_service_range_are_replaced_and_other_numbers_kept() -> None:
    text = ("clusterIP: 10.0.0.17\nclusterIPs:\n- 10.0.0.255\n"
            "image: nginx:1.25.3\nother: 10.0.1.5\nversion: 110.0.0.1")
    assert normalize(text, NS) == (
        "clusterIP: <CLUSTER-IP>\nclusterIPs:\n- <CLUSTER-IP>\n"
        "image: nginx:1.25.3\nother: 10.0.1.5\nversion: 110.0.0.1")


def test_tokens_pointers_and_kubectl_log_lines_are_replaced() -> None:
    text = ("eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOlsiYSJdfQ.c2lnbmF0dXJl\n"
            "Spec{MinAvailable:(*intstr.IntOrString)(0xc00a7e0420), X:(*T)(nil)}\n"
            "W1128 17:35:25.849001    1681 diff.go:714] Object keeps changing")
    assert normalize(text, NS) == (
        "<TOKEN>\n"
        "Spec{MinAvailable:(*intstr.IntOrString)(<POINTER>), X:(*T)(nil)}\n"
        "W<KLOG> diff.go:714] Object keeps changing")


def test_the_random_non_breaking_spaces_of_a_go_cmp_diff_are_plain_spaces() -> None:
    text = "spec: Forbidden\n\u00a0 core.Spec{\n-\u00a0\tA: 1,\n+\u00a0\tA: 2,\n\u00a0 }\nx\u00a0y"
    assert normalize(text, NS) == (
        "spec: Forbidden\n  core.Spec{\n- \tA: 1,\n+ \tA: 2,\n  }\nx\u00a0y")


def test_generated_names_are_replaced_only_after_a_given_prefix() -> None:
    text = "configmap/gen-x7k2q created\nconfigmap/other-x7k2q created\ngen-toolong1"
    assert normalize(text, NS, ["gen-"]) == (
        "configmap/gen-<GEN> created\nconfigmap/other-x7k2q created\ngen-toolong1")


def test_kubectl_diff_paths_and_header_times_are_replaced() -> None:
    text = (f"diff -u -N /tmp/LIVE-2873110/v1.ConfigMap.{NS}.x /tmp/MERGED-99/v1.ConfigMap.{NS}.x\n"
            f"--- /tmp/LIVE-2873110/v1.ConfigMap.{NS}.x\t2026-11-28 17:30:00.123456789 +0000\n")
    assert normalize(text, NS) == (
        "diff -u -N <LIVE>/v1.ConfigMap.<NS>.x <MERGED>/v1.ConfigMap.<NS>.x\n"
        "--- <LIVE>/v1.ConfigMap.<NS>.x\t<TIME>\n")


def test_tables_are_cut_at_the_header_offsets_and_ages_replaced() -> None:
    short = ("NAME   TYPE        CLUSTER-IP   EXTERNAL-IP   PORT(S)   AGE\n"
             "web    ClusterIP   10.0.0.17    <none>        80/TCP    5s\n")
    long = ("NAME   TYPE        CLUSTER-IP   EXTERNAL-IP   PORT(S)   AGE\n"
            "web    ClusterIP   10.0.0.170   <none>        80/TCP    2m30s\n")
    want = ("NAME   TYPE   CLUSTER-IP   EXTERNAL-IP   PORT(S)   AGE\n"
            "web   ClusterIP   <CLUSTER-IP>   <none>   80/TCP   <AGE>\n")
    assert normalize(short, NS) == normalize(long, NS) == want


def test_times_go_prints_with_time_string_are_replaced() -> None:
    assert normalize("Created on:   2026-11-29 16:45:31 +0000 UTC\n", NS) == (
        "Created on:   <TIME> UTC\n")


def test_table_cells_holding_the_namespace_are_cut_where_kubectl_laid_them_out() -> None:
    """A cell made shorter by a replacement (a name holding the namespace's) does not
    shift the cells after it into the wrong columns."""
    other = "rk-test-99"
    text = (f"NAME                   WEBHOOKS   AGE\n"
            f"check-{NS}   1          2s\n")
    shorter = (f"NAME             WEBHOOKS   AGE\n"
               f"check-{other}   1          15s\n")
    want = "NAME   WEBHOOKS   AGE\ncheck-<NS>   1   <AGE>\n"
    assert normalize(text, NS) == normalize(shorter, other) == want


def test_table_cells_outside_age_columns_and_empty_cells_are_kept() -> None:
    text = ("NAME      CLASS    HOSTS         ADDRESS   PORTS   AGE\n"
            "site      <none>   example.com             80      3d4h\n"
            "\n"
            "data: 5s\n")
    assert normalize_tables(text) == ("NAME   CLASS   HOSTS   ADDRESS   PORTS   AGE\n"
                                      "site   <none>   example.com      80   <AGE>\n"
                                      "\n"
                                      "data: 5s\n")


def test_a_real_difference_survives_normalization() -> None:
    kube = ("NAME      READY   UP-TO-DATE   AVAILABLE   AGE\n"
            "idle      0/0     0            0           7s\n")
    local = "NAME   CREATED AT\nidle   2026-11-28T17:30:00Z\n"
    assert normalize(kube, NS) != normalize(local, NS)
    assert normalize("cpu: 200m", NS) != normalize("cpu: 100m", NS)
    assert normalize("replicas: 3", NS) != normalize("replicas: 2", NS)


def test_every_session_of_the_corpus_loads_and_names_only_kubectl_steps() -> None:
    sessions = load_sessions()
    assert len(sessions) >= 40
    assert all(s.steps and all(step.kubectl for step in s.steps) for s in sessions)


def test_a_malformed_session_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("- kubectl: get configmaps\n")
    with pytest.raises(ValueError, match="non-empty list of strings"):
        load_sessions(tmp_path)
    (tmp_path / "bad.yaml").write_text("- kubectl: [get]\n  stdn: x\n")
    with pytest.raises(ValueError, match="a step is"):
        load_sessions(tmp_path)


def test_generate_name_prefixes_come_from_the_manifests_and_the_server() -> None:
    session = Session("s", (Step(("create", "-f", "-"),
                                 "metadata:\n  generateName: gen-\n"),))
    assert session.generate_names() == [*SERVER_GENERATED, "gen-"]


FAKE_KUBECTL = """#!/bin/sh
# prints its namespace (normalized away), then for "show" the kubeconfig's name
echo "namespace $4"
if [ "$7" = show ]; then echo "config $(basename "$2")"; fi
cat >/dev/null
"""


async def test_run_session_names_the_first_differing_step_with_a_diff(tmp_path: Path) -> None:
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(FAKE_KUBECTL)
    kubectl.chmod(0o755)
    one = Server("kube-apiserver", tmp_path / "kube.conf", "rk-test-00000001", tmp_path / "a")
    two = Server("in-process", tmp_path / "local.conf", "rk-test-00000002", tmp_path / "b")
    same = Session("same", (Step(("get", "x")), Step(("get", "y"), "stdin")))
    assert await run_session(str(kubectl), same, one, two) == 2
    differs = Session("differs", (Step(("get", "x")), Step(("show",)), Step(("get", "z"))))
    with pytest.raises(SessionMismatch) as raised:
        await run_session(str(kubectl), differs, one, two)
    assert raised.value.step == 2
    message = str(raised.value)
    assert message.startswith("session differs, step 2 of 3: kubectl show\n")
    assert "-config kube.conf\n+config local.conf\n" in message


def test_a_422s_causes_are_compared_in_sorted_order() -> None:
    text = ('The Widget "w" is invalid: \n* spec.size: Unsupported value\n'
            "* spec.replicas: Invalid value\nafter")
    assert normalize(text, "") == ('The Widget "w" is invalid: \n* spec.replicas: Invalid '
                                   "value\n* spec.size: Unsupported value\nafter")


def test_go_values_of_internal_types_are_replaced_whole() -> None:
    kube = ('The Job "once" is invalid: spec.template: Invalid value: core.PodTemplateSpec{'
            'ObjectMeta:v1.ObjectMeta{Name:"", Labels:map[string]string{"a":"b"}}, Spec:core.'
            'PodSpec{Volumes:[]core.Volume(nil)}}: field is immutable')
    ours = ('The Job "once" is invalid: spec.template: Invalid value: core.PodTemplateSpec{...}: '
            "field is immutable")
    shown = ('The Job "once" is invalid: spec.template: Invalid value: '
             "core.PodTemplateSpec{<GO-VALUE>}: field is immutable")
    assert normalize(kube, "") == normalize(ours, "") == shown
    assert normalize("v1.ObjectMeta{Name:\"x\"}", "") == "v1.ObjectMeta{Name:\"x\"}"
