"""The strategies of the workload kinds, as kube-apiserver 1.28 has them.

Measured on kube-apiserver v1.28.7 (``tests/testing/test_apiserver_workloads.py``):

* PrepareForCreate: the status a create stores (Deployments, Jobs and
  CronJobs ``{}``, ReplicaSets and RCs ``replicas: 0``, StatefulSets
  ``replicas``/``availableReplicas`` 0, DaemonSets their four counts 0); a
  Job's selector and labels made from its uid (unless ``manualSelector``); a
  DaemonSet's ``deprecated.daemonset.template.generation`` annotation, which
  follows its template's changes on an update;
* Validate: a selector is required and must match the template's labels
  (apps/v1 kinds), the template's containers are present and named (an
  image may be left out), replicas and history limits are not negative (apps/v1
  kinds and RCs), a Job's template restarts ``OnFailure`` or ``Never``;
* ValidateUpdate: an apps/v1 selector is immutable;
* a ``status`` write: the counts :mod:`.status_validation` checks;
* defaults: :mod:`.workload_defaults`.

Everything else of these kinds' validation (the pod spec beyond containers,
update strategies, a Job's immutable template, ...) is not done.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from ..machinery.resources import ResourceType
from ..machinery.status import Cause
from ..machinery.unstructured import Obj
from ..machinery.validation import invalid, required
from .core_validation import validate_pod_spec
from .cron_schedule import schedule_error, time_zone_error
from .status_validation import (
    validate_daemonset_status,
    validate_deployment_status,
    validate_job_status,
    validate_replicaset_status,
    validate_statefulset_status,
)
from .strategy import Strategy
from .workload_defaults import (
    default_cronjob,
    default_daemonset,
    default_deployment,
    default_job,
    default_replicaset,
    default_replication_controller,
    default_statefulset,
    spec_of,
)

__all__ = ["ControllerRevisionStrategy", "CronJobStrategy", "DaemonSetStrategy",
           "DeploymentStrategy", "JobStrategy", "ReplicaSetStrategy",
           "ReplicationControllerStrategy", "StatefulSetStrategy"]

_TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
_STATEFULSET_UPDATABLE = frozenset({"replicas", "ordinals", "template", "updateStrategy",
                                    "persistentVolumeClaimRetentionPolicy", "minReadySeconds"})


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _go_map(value: Mapping[str, Any]) -> str:
    inner = ", ".join(f'"{k}":"{v}"' for k, v in sorted(value.items()))
    return f"map[string]string{{{inner}}}"


def _go_selector(selector: Mapping[str, Any]) -> str:
    labels = selector.get("matchLabels")
    shown = _go_map(labels) if isinstance(labels, dict) else "map[string]string(nil)"
    return (f"v1.LabelSelector{{MatchLabels:{shown}, "
            "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}")


def _selects(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or ():
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if (op == "In" and labels.get(key) not in values) or (
                op == "NotIn" and key in labels and labels[key] in values) or (
                op == "Exists" and key not in labels) or (
                op == "DoesNotExist" and key in labels):
            return False
    return True



class WorkloadStrategy(Strategy):
    """What the workload kinds share: the status a create stores, and (``selected``:
    the apps/v1 kinds) a required, matching, immutable selector and (``counted``)
    replicas and history limits that are not negative."""

    create_status: ClassVar[Mapping[str, Any]] = {}
    selected: ClassVar[bool] = False
    counted: ClassVar[bool] = False

    def prepare_for_create(self, rtype: ResourceType, obj: Obj, existing: Iterable[Obj]
                           ) -> None:
        super().prepare_for_create(rtype, obj, existing)
        obj["status"] = copy.deepcopy(dict(self.create_status))

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        spec = _spec(obj)
        causes: list[Cause] = []
        if self.selected:
            selector = spec.get("selector")
            labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
            if not isinstance(selector, dict) or not selector:
                causes.append(Cause("FieldValueRequired", "Required value", "spec.selector"))
            if not isinstance(selector, dict) or not selector or not _selects(selector, labels):
                causes.append(Cause("FieldValueInvalid", f"Invalid value: {_go_map(labels)}: "
                                    "`selector` does not match template `labels`",
                                    "spec.template.metadata.labels"))
        template = spec.get("template")
        if isinstance(template, dict) or self.selected:
            pod_spec = (template or {}).get("spec") if isinstance(template, dict) else None
            # a template's containers may leave their image to be filled in later
            causes.extend(Cause(c.reason, c.message, f"spec.template.{c.field}")
                          for c in validate_pod_spec(pod_spec)
                          if not c.field.endswith(".image"))
        if self.counted:
            for name in ("replicas", "revisionHistoryLimit"):
                value = spec.get(name)
                if isinstance(value, int) and value < 0:
                    causes.append(invalid(f"spec.{name}", value,
                                          "must be greater than or equal to 0"))
        return causes

    def immutable(self, old: Obj, new: Obj) -> list[Cause]:
        before, after = _spec(old), _spec(new)
        if not self.selected or before.get("selector") == after.get("selector"):
            return []
        selector = after.get("selector")
        shown = _go_selector(selector if isinstance(selector, dict) else {})
        return [Cause("FieldValueInvalid", f"Invalid value: {shown}: field is immutable",
                      "spec.selector")]


class DeploymentStrategy(WorkloadStrategy):
    selected = counted = True
    status_metadata = ("annotations", "finalizers", "ownerReferences")

    def validate_status(self, obj: Obj, old: Obj) -> list[Cause]:
        return validate_deployment_status(obj, old)

    def default(self, obj: Obj) -> None:
        if (spec := spec_of(obj)) is not None:
            default_deployment(spec)


class StatefulSetStrategy(WorkloadStrategy):
    """A StatefulSet's spec may change only in the fields kube-apiserver lets change."""

    create_status: ClassVar[Mapping[str, Any]] = {"replicas": 0, "availableReplicas": 0}
    selected = counted = True
    scale_names_subresource = False

    def prepare_for_create(self, rtype: ResourceType, obj: Obj, existing: Iterable[Obj]
                           ) -> None:
        super().prepare_for_create(rtype, obj, existing)
        _drop_max_unavailable(_spec(obj))

    def prepare_for_update(self, old: Obj, new: Obj, subresource: str | None) -> None:
        """``rollingUpdate.maxUnavailable`` is dropped unless the old object used it (its
        feature gate, MaxUnavailableStatefulSet, is off in 1.28)."""
        if _rolling_update(_spec(old)).get("maxUnavailable") is None:
            _drop_max_unavailable(_spec(new))

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        causes = super().validate(obj, namespace)
        strategy = _spec(obj).get("updateStrategy")
        rolling = _rolling_update(_spec(obj))
        if (isinstance(strategy, dict) and strategy.get("type") == "OnDelete"
                and strategy.get("rollingUpdate") is not None):
            shown = (f"apps.RollingUpdateStatefulSetStrategy{{Partition:"
                     f"{rolling.get('partition', 0)}, MaxUnavailable:(*intstr.IntOrString)"
                     f"{'(nil)' if rolling.get('maxUnavailable') is None else '(0xc000010000)'}}}")
            causes.append(Cause("FieldValueInvalid", f"Invalid value: {shown}: only allowed for "
                                "updateStrategy 'RollingUpdate'",
                                "spec.updateStrategy.rollingUpdate"))
        return causes

    def immutable(self, old: Obj, new: Obj) -> list[Cause]:
        """One Forbidden for any other field changed (the selector among them)."""
        before, after = _spec(old), _spec(new)
        if ({k: v for k, v in before.items() if k not in _STATEFULSET_UPDATABLE}
                == {k: v for k, v in after.items() if k not in _STATEFULSET_UPDATABLE}):
            return []
        return [Cause("FieldValueForbidden", "Forbidden: updates to statefulset spec for "
                      "fields other than 'replicas', 'ordinals', 'template', 'updateStrategy',"
                      " 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are "
                      "forbidden", "spec")]

    def validate_status(self, obj: Obj, old: Obj) -> list[Cause]:
        return validate_statefulset_status(obj, old)

    def default(self, obj: Obj) -> None:
        if (spec := spec_of(obj)) is not None:
            default_statefulset(spec)


class ReplicaSetStrategy(WorkloadStrategy):
    create_status: ClassVar[Mapping[str, Any]] = {"replicas": 0}
    selected = counted = True

    def validate_status(self, obj: Obj, old: Obj) -> list[Cause]:
        return validate_replicaset_status(obj, old)

    def default(self, obj: Obj) -> None:
        if (spec := spec_of(obj)) is not None:
            default_replicaset(spec)


class DaemonSetStrategy(WorkloadStrategy):
    """A DaemonSet's template generation annotation: 1 when created, the object's next
    generation when an update changes its template."""

    create_status: ClassVar[Mapping[str, Any]] = {
        "currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
        "numberReady": 0}
    selected = counted = True

    def validate_status(self, obj: Obj, old: Obj) -> list[Cause]:
        return validate_daemonset_status(obj, old)

    def default(self, obj: Obj) -> None:
        if (spec := spec_of(obj)) is not None:
            default_daemonset(spec)

    def prepare_for_create(self, rtype: ResourceType, obj: Obj, existing: Iterable[Obj]
                           ) -> None:
        super().prepare_for_create(rtype, obj, existing)
        annotations = obj["metadata"].setdefault("annotations", {})
        annotations[_TEMPLATE_GENERATION] = "1"

    def check_encoding(self, obj: Obj) -> None:
        """The annotation is apps/v1's form of the internal ``spec.templateGeneration``,
        which a body decodes to 1 without it: the creator writes it (its field manager
        owns it); an update's stored generation is put back by :meth:`prepare_for_update`."""
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            annotations = meta.get("annotations")
            if not isinstance(annotations, dict):
                annotations = meta["annotations"] = {}
            annotations.setdefault(_TEMPLATE_GENERATION, "1")

    def prepare_for_update(self, old: Obj, new: Obj, subresource: str | None) -> None:
        annotations = new["metadata"].setdefault("annotations", {})
        if _spec(old).get("template") != _spec(new).get("template"):
            generation = int(str(old["metadata"].get("generation", 1))) + 1
            annotations[_TEMPLATE_GENERATION] = str(generation)
        elif (kept := (old["metadata"].get("annotations") or {}).get(
                _TEMPLATE_GENERATION)) is not None:
            annotations[_TEMPLATE_GENERATION] = kept


class ReplicationControllerStrategy(WorkloadStrategy):
    create_status: ClassVar[Mapping[str, Any]] = {"replicas": 0}
    counted = True

    def validate_status(self, obj: Obj, old: Obj) -> list[Cause]:
        return validate_replicaset_status(obj, old)

    def default(self, obj: Obj) -> None:
        if (spec := spec_of(obj)) is not None:
            default_replication_controller(obj, spec)


class JobStrategy(WorkloadStrategy):
    """A Job's selector is made from its uid when created; its template restarts
    ``OnFailure`` or ``Never``. Its template is fixed once created, but for the
    scheduling directives of a suspended Job that never started (labels,
    annotations, node selector, tolerations, affinity, scheduling gates); its
    completions too, but for an Indexed Job whose completions follow its
    parallelism (elastic)."""

    def immutable(self, old: Obj, new: Obj) -> list[Cause]:
        before, after = _spec(old), _spec(new)
        causes: list[Cause] = []
        if before.get("template") != after.get("template") and not (
                before.get("suspend") is True and not (old.get("status") or {}).get(
                    "startTime") and _scheduling_only(before.get("template"),
                                                      after.get("template"))):
            # kube-apiserver shows Go's %#v of the whole internal PodTemplateSpec here
            causes.append(Cause("FieldValueInvalid", "Invalid value: core.PodTemplateSpec{...}"
                                ": field is immutable", "spec.template"))
        completions = after.get("completions")
        elastic = (after.get("completionMode") == "Indexed"
                   and before.get("completions") == before.get("parallelism")
                   and completions == after.get("parallelism"))
        if completions != before.get("completions") and not elastic:
            causes.append(invalid("spec.completions", completions, "field is immutable"))
        return causes

    def validate_status(self, obj: Obj, old: Obj) -> list[Cause]:
        return validate_job_status(obj, old)

    def default(self, obj: Obj) -> None:
        if (spec := spec_of(obj)) is not None:
            default_job(spec)

    def prepare_for_create(self, rtype: ResourceType, obj: Obj, existing: Iterable[Obj]
                           ) -> None:
        super().prepare_for_create(rtype, obj, existing)
        _select_job(obj)

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        causes = super().validate(obj, namespace)
        policy = ((_spec(obj).get("template") or {}).get("spec") or {}).get("restartPolicy")
        if policy not in ("OnFailure", "Never"):
            detail = 'valid values: "OnFailure", "Never"'
            causes.append(Cause("FieldValueRequired", f"Required value: {detail}",
                                "spec.template.spec.restartPolicy") if policy in (None, "")
                          else Cause("FieldValueNotSupported",
                                     f'Unsupported value: "{policy}": supported values: '
                                     '"OnFailure", "Never"',
                                     "spec.template.spec.restartPolicy"))
        return causes


class CronJobStrategy(WorkloadStrategy):
    """A CronJob's schedule parses as robfig/cron's standard parser reads it, and its
    time zone is one the zone database knows."""

    def default(self, obj: Obj) -> None:
        if (spec := spec_of(obj)) is not None:
            default_cronjob(spec)

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        causes = super().validate(obj, namespace)
        spec = _spec(obj)
        schedule, zone = spec.get("schedule"), spec.get("timeZone")
        if isinstance(schedule, str):
            if not schedule:
                causes.append(required("spec.schedule"))
            elif (problem := schedule_error(schedule)) is not None:
                causes.append(invalid("spec.schedule", schedule, problem))
            elif "TZ" in schedule and zone is not None:
                causes.append(invalid("spec.schedule", schedule, "cannot use both timeZone "
                                      "field and TZ or CRON_TZ in schedule"))
        if isinstance(zone, str) and (problem := time_zone_error(zone)) is not None:
            causes.append(invalid("spec.timeZone", zone, problem))
        return causes


_SCHEDULING = {"metadata": ("labels", "annotations"),
               "spec": ("nodeSelector", "tolerations", "affinity", "schedulingGates")}


def _scheduling_only(old: Any, new: Any) -> bool:
    """Whether two pod templates differ at most in their scheduling directives."""
    def rest(template: Any) -> Any:
        template = copy.deepcopy(template) if isinstance(template, dict) else {}
        for part, keys in _SCHEDULING.items():
            section = template.get(part)
            if isinstance(section, dict):
                for key in keys:
                    section.pop(key, None)
        return template
    return bool(rest(old) == rest(new))


def _rolling_update(spec: Obj) -> Obj:
    strategy = spec.get("updateStrategy")
    rolling = strategy.get("rollingUpdate") if isinstance(strategy, dict) else None
    return rolling if isinstance(rolling, dict) else {}


def _drop_max_unavailable(spec: Obj) -> None:
    _rolling_update(spec).pop("maxUnavailable", None)


def _select_job(obj: Obj) -> None:
    spec = _spec(obj)
    if spec.get("manualSelector") is True:
        return
    uid, name = obj["metadata"]["uid"], obj["metadata"].get("name", "")
    template = spec.setdefault("template", {})
    meta = template.setdefault("metadata", {})
    labels = meta.setdefault("labels", {})
    labels.update({"batch.kubernetes.io/controller-uid": uid,
                   "batch.kubernetes.io/job-name": name, "controller-uid": uid,
                   "job-name": name})
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    if not obj["metadata"].get("labels"):  # SetDefaults_Job, run again when read back
        obj["metadata"]["labels"] = dict(labels)



class ControllerRevisionStrategy(Strategy):
    """ControllerRevisions: ``data`` is required (``ValidateControllerRevision``)."""

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        return [] if obj.get("data") is not None else [required("data", "data is mandatory")]
