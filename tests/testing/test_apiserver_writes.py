"""Create, update, patch, delete: metadata, concurrency, status and no-op writes."""

from __future__ import annotations

from reconcilekit.testing import Cluster

from k8s_objects import configmap, pod, widget


async def test_create_sets_server_metadata(apiserver: Cluster, pods: str) -> None:
    # rest.BeforeCreate fills uid, creationTimestamp; storage sets resourceVersion.
    got = await apiserver.request("POST", pods, json=pod("a"))
    assert got.status == 201
    meta = got.body["metadata"]
    assert meta["uid"] and meta["resourceVersion"].isdigit()
    assert meta["creationTimestamp"].endswith("Z")
    assert meta["namespace"] == apiserver.namespace
    again = await apiserver.request("POST", pods, json=pod("a"))
    assert again.status == 409 and again.body["reason"] == "AlreadyExists"
    # apimachinery errors.NewAlreadyExists: details.kind is the resource.
    assert again.body["details"] == {"name": "a", "kind": "pods"}
    assert again.body["message"] == 'pods "a" already exists'


async def test_resource_versions_increase_across_resources(
        apiserver: Cluster, pods: str, configmaps: str) -> None:
    # One etcd revision counter orders writes of every resource.
    rvs = []
    for i in range(3):
        a = await apiserver.request("POST", pods, json=pod(f"p{i}"))
        b = await apiserver.request("POST", configmaps, json=configmap(f"c{i}"))
        rvs += [int(a.body["metadata"]["resourceVersion"]),
                int(b.body["metadata"]["resourceVersion"])]
    assert rvs == sorted(rvs) and len(set(rvs)) == len(rvs)


async def test_generate_name_makes_a_unique_name(apiserver: Cluster, configmaps: str) -> None:
    # names.SimpleNameGenerator: the prefix plus 5 random characters.
    body = configmap("")
    del body["metadata"]["name"]
    body["metadata"]["generateName"] = "gen-"
    first = await apiserver.request("POST", configmaps, json=body)
    second = await apiserver.request("POST", configmaps, json=body)
    assert first.status == second.status == 201
    names = {first.body["metadata"]["name"], second.body["metadata"]["name"]}
    assert len(names) == 2 and all(n.startswith("gen-") and len(n) == 9 for n in names)


async def test_namespace_must_exist(apiserver: Cluster) -> None:
    # NamespaceLifecycle admission: NotFound for the namespace itself.
    got = await apiserver.request("POST", "/api/v1/namespaces/nowhere-rk/configmaps",
                                  json=configmap("x"))
    assert got.status == 404
    assert got.body["message"] == 'namespaces "nowhere-rk" not found'


async def test_get_missing_is_a_not_found_status(apiserver: Cluster, pods: str) -> None:
    got = await apiserver.request("GET", f"{pods}/ghost")
    assert got.status == 404
    assert got.body == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                        "status": "Failure", "message": 'pods "ghost" not found',
                        "reason": "NotFound", "details": {"name": "ghost", "kind": "pods"},
                        "code": 404}


async def test_update_with_stale_resource_version_conflicts(
        apiserver: Cluster, configmaps: str) -> None:
    made = (await apiserver.request("POST", configmaps, json=configmap("c"))).body
    first = dict(made, data={"k": "1"})
    ok = await apiserver.request("PUT", f"{configmaps}/c", json=first)
    assert ok.status == 200
    assert int(ok.body["metadata"]["resourceVersion"]) > int(made["metadata"]["resourceVersion"])
    stale = await apiserver.request("PUT", f"{configmaps}/c", json=dict(made, data={"k": "2"}))
    assert stale.status == 409 and stale.body["reason"] == "Conflict"
    # apimachinery errors.NewConflict + registry's OptimisticLockErrorMsg.
    assert stale.body["message"] == (
        'Operation cannot be fulfilled on configmaps "c": the object has been modified; '
        "please apply your changes to the latest version and try again")


async def test_unconditional_update_allowed_for_configmaps_refused_for_crs_and_leases(
        apiserver: Cluster, configmaps: str, widgets: str) -> None:
    # ConfigMap strategy AllowUnconditionalUpdate() is true; Lease's and the
    # custom resource strategy's are false (pkg/registry/*/strategy.go).
    await apiserver.request("POST", configmaps, json=configmap("c"))
    body = configmap("c", {"a": "b"})
    assert (await apiserver.request("PUT", f"{configmaps}/c", json=body)).status == 200
    await apiserver.request("POST", widgets, json=widget("w"))
    refused = await apiserver.request("PUT", f"{widgets}/w", json=widget("w", {"size": 2}))
    assert refused.status == 422 and refused.body["reason"] == "Invalid"
    assert "metadata.resourceVersion" in refused.body["message"]
    leases = f"/apis/coordination.k8s.io/v1/namespaces/{apiserver.namespace}/leases"
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}}
    assert (await apiserver.request("POST", leases, json=lease)).status == 201
    refused = await apiserver.request("PUT", f"{leases}/l", json=lease)
    assert refused.status == 422


async def test_unchanged_write_keeps_resource_version_and_emits_nothing(
        apiserver: Cluster, configmaps: str) -> None:
    # GuaranteedUpdate skips the etcd write when the encoded object is unchanged
    # (storage/etcd3/store.go), so the resourceVersion stays and no event fires.
    made = (await apiserver.request("POST", configmaps, json=configmap("c", {"a": "1"}))).body
    rv = made["metadata"]["resourceVersion"]
    async with apiserver.watch(configmaps, {"resourceVersion": rv}) as events:
        same = await apiserver.request("PUT", f"{configmaps}/c", json=made)
        assert same.status == 200 and same.body["metadata"]["resourceVersion"] == rv
        patched = await apiserver.request("PATCH", f"{configmaps}/c", json={"data": {"a": "1"}},
                                          content_type="application/merge-patch+json")
        assert patched.body["metadata"]["resourceVersion"] == rv
        changed = await apiserver.request("PATCH", f"{configmaps}/c",
                                          json={"data": {"a": "2"}},
                                          content_type="application/merge-patch+json")
        first = await anext(events)
    assert first["type"] == "MODIFIED"
    assert first["object"]["metadata"]["resourceVersion"] == (
        changed.body["metadata"]["resourceVersion"])


async def test_generation_bumps_on_spec_changes_only(apiserver: Cluster, widgets: str) -> None:
    # customresource strategy PrepareForUpdate: generation+1 only when something
    # other than metadata and status changed.
    made = (await apiserver.request("POST", widgets, json=widget("w"))).body
    assert made["metadata"]["generation"] == 1
    path = f"{widgets}/w"
    merge = "application/merge-patch+json"
    labelled = await apiserver.request("PATCH", path, json={"metadata": {"labels": {"a": "b"}}},
                                       content_type=merge)
    assert labelled.body["metadata"]["generation"] == 1
    status = await apiserver.request("PATCH", f"{path}/status",
                                     json={"status": {"ready": True}}, content_type=merge)
    assert status.body["metadata"]["generation"] == 1
    assert status.body["status"] == {"ready": True}
    spec = await apiserver.request("PATCH", path, json={"spec": {"size": 3}},
                                   content_type=merge)
    assert spec.body["metadata"]["generation"] == 2


async def test_status_subresource_separates_status_from_the_main_resource(
        apiserver: Cluster, widgets: str) -> None:
    # CRD docs, "Status subresource": PUT /status ignores everything but status; PUT
    # and PATCH of the main resource ignore status changes; create drops status.
    made = (await apiserver.request("POST", widgets, json=dict(
        widget("w"), status={"ignored": True}))).body
    assert "status" not in made  # a create may not set status
    path = f"{widgets}/w"
    with_status = await apiserver.request("PUT", f"{path}/status", json=dict(
        made, spec={"size": 99}, status={"phase": "Ready"}))
    assert with_status.status == 200
    assert with_status.body["status"] == {"phase": "Ready"}
    assert with_status.body["spec"] == {"size": 1}  # /status ignores everything else
    main = await apiserver.request("PUT", path, json=dict(
        with_status.body, spec={"size": 2}, status={"phase": "Hacked"}))
    assert main.body["status"] == {"phase": "Ready"}  # the main resource ignores status
    assert main.body["spec"] == {"size": 2}
    only_status = dict(main.body, status={"phase": "Other"})
    noop = await apiserver.request("PUT", path, json=only_status)
    # A status change sent to the main resource changes nothing: same resourceVersion.
    assert noop.body["metadata"]["resourceVersion"] == main.body["metadata"]["resourceVersion"]


async def test_server_owned_metadata_cannot_be_changed(apiserver: Cluster, configmaps: str
                                                       ) -> None:
    # rest.BeforeUpdate copies creationTimestamp, uid, deletionTimestamp from the old object.
    made = (await apiserver.request("POST", configmaps, json=configmap("c"))).body
    forged = dict(made, metadata=dict(made["metadata"], creationTimestamp="2000-01-01T00:00:00Z",
                                      labels={"x": "y"}))
    got = await apiserver.request("PUT", f"{configmaps}/c", json=forged)
    assert got.body["metadata"]["creationTimestamp"] == made["metadata"]["creationTimestamp"]
    assert got.body["metadata"]["uid"] == made["metadata"]["uid"]


async def test_merge_json_and_strategic_patches(apiserver: Cluster, pods: str,
                                                widgets: str) -> None:
    await apiserver.request("POST", pods, json=pod("p", {"a": "1"}, finalizers=["x/one"]))
    path = f"{pods}/p"
    strategic = await apiserver.request(
        "PATCH", path, json={"metadata": {"finalizers": ["x/two"], "labels": {"b": "2"}}},
        content_type="application/strategic-merge-patch+json")
    assert strategic.status == 200, strategic.body
    # ObjectMeta.Finalizers is patchStrategy:"merge": the list is unioned.
    # (apimachinery puts patch-only items before server-only ones: ["x/two", "x/one"].)
    assert sorted(strategic.body["metadata"]["finalizers"]) == ["x/one", "x/two"]
    assert strategic.body["metadata"]["labels"] == {"a": "1", "b": "2"}
    merge = await apiserver.request("PATCH", path, json={"metadata": {"finalizers": ["x/two"]}},
                                    content_type="application/merge-patch+json")
    assert merge.body["metadata"]["finalizers"] == ["x/two"]  # merge-patch replaces lists
    json_patch = await apiserver.request("PATCH", path, json=[
        {"op": "test", "path": "/metadata/finalizers", "value": ["x/two"]},
        {"op": "remove", "path": "/metadata/finalizers/0"}],
        content_type="application/json-patch+json")
    assert json_patch.status == 200
    assert "finalizers" not in json_patch.body["metadata"] or (
        json_patch.body["metadata"]["finalizers"] == [])
    failed = await apiserver.request("PATCH", path, json=[
        {"op": "test", "path": "/metadata/labels/a", "value": "nope"}],
        content_type="application/json-patch+json")
    assert failed.status == 422 and failed.body["kind"] == "Status"
    await apiserver.request("POST", widgets, json=widget("w"))
    refused = await apiserver.request("PATCH", f"{widgets}/w", json={"spec": {}},
                                      content_type="application/strategic-merge-patch+json")
    assert refused.status == 415 and refused.body["reason"] == "UnsupportedMediaType"


async def test_patch_with_resource_version_is_a_precondition(
        apiserver: Cluster, configmaps: str) -> None:
    # A resourceVersion inside a patch is an optimistic-concurrency precondition.
    await apiserver.request("POST", configmaps, json=configmap("c"))
    got = await apiserver.request(
        "PATCH", f"{configmaps}/c",
        json={"metadata": {"resourceVersion": "1"}, "data": {"a": "b"}},
        content_type="application/merge-patch+json")
    assert got.status == 409 and got.body["reason"] == "Conflict"


async def test_delete_preconditions(apiserver: Cluster, configmaps: str) -> None:
    # metav1.Preconditions; the storage layer's message, naming the kind (kube-apiserver 1.28).
    made = (await apiserver.request("POST", configmaps, json=configmap("c"))).body
    path = f"{configmaps}/c"
    wrong_uid = await apiserver.request("DELETE", path, json={
        "kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "nope"}})
    assert wrong_uid.status == 409, wrong_uid
    assert wrong_uid.body["message"] == (
        'Operation cannot be fulfilled on ConfigMap "c": the UID in the precondition (nope) '
        f'does not match the UID in record ({made["metadata"]["uid"]}). The object might '
        "have been deleted and then recreated")
    wrong_rv = await apiserver.request("DELETE", path, json={
        "preconditions": {"resourceVersion": "1"}})
    assert wrong_rv.status == 409
    assert wrong_rv.body["message"] == (
        'Operation cannot be fulfilled on ConfigMap "c": the ResourceVersion in the '
        f'precondition (1) does not match the ResourceVersion in record '
        f'({made["metadata"]["resourceVersion"]}). The object might have been modified')
    assert wrong_rv.body["details"] == {"name": "c", "kind": "ConfigMap"}
    ok = await apiserver.request("DELETE", path, json={"preconditions": {
        "uid": made["metadata"]["uid"], "resourceVersion": made["metadata"]["resourceVersion"]}})
    assert ok.status == 200
    assert ok.body["kind"] == "Status" and ok.body["status"] == "Success"
    assert (await apiserver.request("GET", path)).status == 404


async def test_deletecollection_removes_matching_objects(apiserver: Cluster, configmaps: str
                                                         ) -> None:
    # DELETE on a collection with a labelSelector (registry.Store.DeleteCollection).
    for name, team in [("a", "x"), ("b", "x"), ("c", "y")]:
        await apiserver.request("POST", configmaps, json=configmap(name, labels={"team": team}))
    got = await apiserver.request("DELETE", configmaps, params={"labelSelector": "team=x"})
    assert got.status == 200
    left = await apiserver.request("GET", configmaps, params={"labelSelector": "team"})
    assert [i["metadata"]["name"] for i in left.body["items"]] == ["c"]


async def test_lease_times_have_six_fractional_digits(apiserver: Cluster) -> None:
    # metav1.MicroTime marshals with RFC3339Micro ("2006-01-02T15:04:05.000000Z07:00").
    leases = f"/apis/coordination.k8s.io/v1/namespaces/{apiserver.namespace}/leases"
    def lease(name: str, acquire: str, renew: str) -> dict[str, object]:
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name},
                "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
                         "acquireTime": acquire, "renewTime": renew}}

    got = await apiserver.request("POST", leases, json=lease(
        "l", "2026-01-02T03:04:05.123456+02:00", "2026-01-02T03:04:05.000000Z"))
    assert got.status == 201, got.body
    assert got.body["spec"]["acquireTime"] == "2026-01-02T01:04:05.123456Z"
    assert got.body["spec"]["renewTime"] == "2026-01-02T03:04:05.000000Z"
    layout = ' as "2006-01-02T15:04:05.000000Z07:00": '
    # Go's time.Parse errors, element by element
    for value, why in (("2026-01-02T03:04:05Z", layout + 'cannot parse "Z" as ".000000"'),
                       ("2026-01-02T03:04:05.123Z", layout + 'cannot parse ".123Z" as ".000000"'),
                       ("2026-01-02T03:04:05.123456789Z",
                        layout + 'cannot parse "789Z" as "Z07:00"'),
                       ("garbage", layout + 'cannot parse "garbage" as "2006"'),
                       ("2026-13-02T03:04:05.000000Z", ": month out of range"),
                       ("2026-02-30T03:04:05.000000Z", ": day out of range"),
                       ("2026-01-02T03:04:05.000000Z!", ': extra text: "!"')):
        bad = await apiserver.request("POST", leases, json=lease("m", value, value))
        assert bad.status == 400, bad
        assert bad.body["message"] == (
            f'Lease in version "v1" cannot be handled as a Lease: parsing time "{value}"{why}')


async def test_dry_run_answers_without_storing(apiserver: Cluster, configmaps: str) -> None:
    # ?dryRun=All runs every check and admission, and stores nothing: a dry-run
    # create answers without a resourceVersion, an update or patch with the old one.
    made = (await apiserver.request("POST", configmaps, json=configmap("c", {"a": "1"}))).body
    rv = made["metadata"]["resourceVersion"]
    dry = {"dryRun": "All"}
    created = await apiserver.request("POST", configmaps, json=configmap("d"), params=dry)
    assert created.status == 201 and "resourceVersion" not in created.body["metadata"]
    assert created.body["metadata"]["uid"]
    updated = await apiserver.request("PUT", f"{configmaps}/c", json=dict(made, data={"a": "2"}),
                                      params=dry)
    assert updated.body["data"] == {"a": "2"} and updated.body["metadata"]["resourceVersion"] == rv
    patched = await apiserver.request("PATCH", f"{configmaps}/c", json={"data": {"a": "3"}},
                                      content_type="application/merge-patch+json", params=dry)
    assert patched.body["data"] == {"a": "3"}
    deleted = await apiserver.request("DELETE", f"{configmaps}/c", params=dry)
    assert deleted.status == 200 and deleted.body["status"] == "Success"
    swept = await apiserver.request("DELETE", configmaps, params=dry)
    assert "c" in {i["metadata"]["name"] for i in swept.body["items"]}
    assert (await apiserver.request("GET", f"{configmaps}/d")).status == 404
    kept = await apiserver.request("GET", f"{configmaps}/c")
    assert kept.body["data"] == {"a": "1"} and kept.body["metadata"]["resourceVersion"] == rv
    # a dry run still runs the checks
    again = await apiserver.request("POST", configmaps, json=configmap("c"), params=dry)
    assert again.status == 409
    bogus = await apiserver.request("POST", configmaps, json=configmap("e"),
                                    params={"dryRun": "Yes"})
    assert bogus.status == 422
    assert bogus.body["message"] == ('CreateOptions.meta.k8s.io "" is invalid: dryRun: '
                                     'Unsupported value: []string{"Yes"}: supported values: "All"')
    assert bogus.body["details"] == {"group": "meta.k8s.io", "kind": "CreateOptions",
                                     "causes": [{"reason": "FieldValueNotSupported",
                                                 "message": 'Unsupported value: []string{"Yes"}'
                                                 ': supported values: "All"',
                                                 "field": "dryRun"}]}


async def test_create_with_a_resource_version_is_refused(apiserver: Cluster,
                                                         configmaps: str) -> None:
    # The storage layer's error, which kube-apiserver passes on as a plain 500.
    got = await apiserver.request("POST", configmaps, json=configmap("c", resourceVersion="5"))
    assert got.status == 500
    assert got.body == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                        "status": "Failure", "code": 500,
                        "message": "resourceVersion should not be set on objects to be created"}


async def test_a_patch_may_not_rename_and_a_strategic_one_keeps_the_kind(
        apiserver: Cluster, configmaps: str) -> None:
    await apiserver.request("POST", configmaps, json=configmap("p"))
    path = f"{configmaps}/p"
    for content_type in ("application/merge-patch+json",
                         "application/strategic-merge-patch+json"):
        renamed = await apiserver.request("PATCH", path, json={"metadata": {"name": "q"}},
                                          content_type=content_type)
        assert renamed.status == 400
        assert renamed.body["message"] == ("the name of the object (q) does not match the "
                                           "name on the URL (p)")
    kept = await apiserver.request("PATCH", path, json={"kind": "Secret"},
                                   content_type="application/strategic-merge-patch+json")
    assert kept.status == 200 and kept.body["kind"] == "ConfigMap"
    changed = await apiserver.request("PATCH", path, json={"apiVersion": "v2"},
                                      content_type="application/merge-patch+json")
    assert changed.status == 422
    assert changed.body["message"].endswith(
        'no kind "ConfigMap" is registered for version "v2" in scheme '
        '"pkg/runtime/scheme.go:100"')


async def test_patch_bodies_that_do_not_decode(apiserver: Cluster, configmaps: str) -> None:
    # The patch handlers' decoding errors; a JSON null is no patch at all (but for
    # a merge patch, "Invalid JSON Patch").
    await apiserver.request("POST", configmaps, json=configmap("p"))
    path = f"{configmaps}/p"
    cases = [
        ("application/merge-patch+json", b"[1]", "error decoding patch: json: cannot "
         "unmarshal array into Go value of type map[string]interface {}"),
        ("application/strategic-merge-patch+json", b'"x"', "json: cannot unmarshal string "
         "into Go value of type map[string]interface {}"),
        ("application/json-patch+json", b"{}", "error decoding patch: json: cannot unmarshal "
         "object into Go value of type []handlers.jsonPatchOp"),
        ("application/json-patch+json", b"[1]", "error decoding patch: json: cannot unmarshal "
         "number into Go value of type handlers.jsonPatchOp"),
        ("application/merge-patch+json", b"null", "Invalid JSON Patch"),
    ]
    for content_type, body, message in cases:
        got = await apiserver.request("PATCH", path, body=body, content_type=content_type)
        assert (got.status, got.body["message"]) == (400, message), (content_type, body)
    for content_type in ("application/json-patch+json",
                         "application/strategic-merge-patch+json"):
        got = await apiserver.request("PATCH", path, body=b"null", content_type=content_type)
        assert got.status == 200, (content_type, got)


async def test_delete_options_are_validated(apiserver: Cluster, configmaps: str) -> None:
    # ValidateDeleteOptions, before the object is even looked up.
    got = await apiserver.request("DELETE", f"{configmaps}/absent", json={
        "propagationPolicy": "Bogus", "orphanDependents": True})
    assert got.status == 422
    assert got.body["message"] == (
        'DeleteOptions.meta.k8s.io "" is invalid: [propagationPolicy: Invalid value: "Bogus": '
        "orphanDependents and deletionPropagation cannot be both set, propagationPolicy: "
        'Unsupported value: "Bogus": supported values: "Foreground", "Background", "Orphan", '
        '"nil"]')
    bad = await apiserver.request("DELETE", f"{configmaps}/absent",
                                  params={"gracePeriodSeconds": "soon"})
    assert bad.status == 400
    assert bad.body["message"] == 'strconv.ParseInt: parsing "soon": invalid syntax'


async def test_update_with_a_foreign_uid_or_a_malformed_resource_version(
        apiserver: Cluster, configmaps: str) -> None:
    made = (await apiserver.request("POST", configmaps, json=configmap("u"))).body
    path = f"{configmaps}/u"
    foreign = await apiserver.request("PUT", path, json=dict(
        made, metadata=dict(made["metadata"], uid="other")))
    assert foreign.status == 409 and foreign.body["reason"] == "Conflict"
    assert foreign.body["message"] == (
        'Operation cannot be fulfilled on configmaps "u": StorageError: invalid object, Code: '
        f"4, Key: /registry/configmaps/{apiserver.namespace}/u, ResourceVersion: 0, "
        "AdditionalErrorMsg: Precondition failed: UID in precondition: other, UID in object "
        f"meta: {made['metadata']['uid']}")
    malformed = await apiserver.request("PUT", path, json=dict(
        made, metadata=dict(made["metadata"], resourceVersion="abc")))
    assert malformed.status == 500
    assert malformed.body["message"] == 'strconv.ParseUint: parsing "abc": invalid syntax'


async def test_unmergeable_strategic_patches_are_plain_500s(apiserver: Cluster,
                                                            configmaps: str) -> None:
    # The strategic merge code's errors, values printed as Go's %v prints them.
    await apiserver.request("POST", configmaps, json=configmap("p", finalizers=["a/x"]))
    path = f"{configmaps}/p"
    cases = [
        ({"$patch": "bogus"}, "unknown patch type: bogus in map: map[$patch:bogus]"),
        ({"metadata": {"finalizers": [{"$patch": "replace"}]}},
         "list element types are not identical: [[a/x] [map[$patch:replace]]]"),
    ]
    for patch, message in cases:
        got = await apiserver.request("PATCH", path, json=patch,
                                      content_type="application/strategic-merge-patch+json")
        assert got.status == 500, (patch, got)
        assert got.body == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Failure", "message": message, "code": 500}
    await apiserver.request("PATCH", path, json={"metadata": {"finalizers": None}},
                            content_type="application/merge-patch+json")
