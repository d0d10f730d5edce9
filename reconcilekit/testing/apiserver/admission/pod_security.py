"""kube-apiserver's PodSecurity admission plugin (the Pod Security Standards, v1.28).

A namespace chooses levels with its labels ``pod-security.kubernetes.io/enforce``,
``warn`` and ``audit`` (``privileged``, ``baseline``, ``restricted``; each with a
``-version``, ``latest`` by default). A Pod created in a namespace whose
``enforce`` level it breaks is refused, 403 ``violates PodSecurity
"LEVEL:VERSION": ...``; one that breaks the ``warn`` level gets a warning
``would violate PodSecurity ...``, and so does a workload (Deployment,
ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, ReplicationController,
PodTemplate) whose Pod template would. A namespace without a ``warn`` label
warns at its ``enforce`` level, so a Deployment whose Pods would be refused
says so when it is created. Each broken check is named as
kube-apiserver names it, in its order:

* baseline: host namespaces, privileged containers, capabilities beyond the
  default set, hostPath volumes, host ports, ``/proc`` mount types, seccomp
  ``Unconfined``, unsafe sysctls;
* restricted, on top: volume types, ``allowPrivilegeEscalation != false``,
  capabilities not dropping ``ALL`` (only ``NET_BIND_SERVICE`` added),
  ``runAsNonRoot != true``, ``runAsUser=0``, a seccomp profile not
  ``RuntimeDefault`` or ``Localhost``.

Audit annotations are not written (the server keeps no audit log).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..machinery.status import StatusError

__all__ = ["PodSecurity", "violations"]

Obj = dict[str, Any]
_PREFIX = "pod-security.kubernetes.io/"
_LEVELS = ("privileged", "baseline", "restricted")
_BASELINE_CAPS = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                  "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
_SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
                 "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies",
                 "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                 "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                 "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
_RESTRICTED_VOLUMES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                       "persistentVolumeClaim", "projected", "secret")
_WORKLOADS = {("", "podtemplates"): ("template",), ("", "replicationcontrollers"):
              ("spec", "template"), ("apps", "replicasets"): ("spec", "template"),
              ("apps", "deployments"): ("spec", "template"),
              ("apps", "statefulsets"): ("spec", "template"),
              ("apps", "daemonsets"): ("spec", "template"), ("batch", "jobs"): ("spec", "template"),
              ("batch", "cronjobs"): ("spec", "jobTemplate", "spec", "template")}


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def _who(kind: str, names: list[str]) -> str:
    return f"{kind}{'s' if len(names) > 1 else ''} {_quoted(names)}"


def _containers(spec: Obj) -> list[Obj]:
    return [c for key in ("initContainers", "containers", "ephemeralContainers")
            for c in spec.get(key) or () if isinstance(c, dict)]


def _sc(obj: Obj) -> Obj:
    found = obj.get("securityContext")
    return found if isinstance(found, dict) else {}


Check = Callable[[Obj, Obj, list[Obj]], str | None]


def _host_namespaces(_meta: Obj, spec: Obj, _cs: list[Obj]) -> str | None:
    on = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k) is True]
    return f"host namespaces ({', '.join(on)})" if on else None


def _privileged(_meta: Obj, _spec: Obj, cs: list[Obj]) -> str | None:
    bad = [c["name"] for c in cs if _sc(c).get("privileged") is True]
    return (f"privileged ({_who('container', bad)} must not set "
            "securityContext.privileged=true)") if bad else None


def _added(cs: list[Obj], allowed: set[str]) -> tuple[list[str], list[str]]:
    names: list[str] = []
    caps: list[str] = []
    for c in cs:
        extra = [cap for cap in ((_sc(c).get("capabilities") or {}).get("add") or ())
                 if cap not in allowed]
        if extra:
            names.append(c["name"])
            caps.extend(x for x in extra if x not in caps)
    return names, caps


def _capabilities_baseline(_meta: Obj, _spec: Obj, cs: list[Obj]) -> str | None:
    names, caps = _added(cs, _BASELINE_CAPS)
    return (f"non-default capabilities ({_who('container', names)} must not include "
            f"{_quoted(sorted(caps))} in securityContext.capabilities.add)") if names else None


def _capabilities_restricted(_meta: Obj, _spec: Obj, cs: list[Obj]) -> str | None:
    no_drop = [c["name"] for c in cs if "ALL" not in (
        (_sc(c).get("capabilities") or {}).get("drop") or ())]
    names, caps = _added(cs, {"NET_BIND_SERVICE"})
    parts = []
    if no_drop:
        parts.append(f'{_who("container", no_drop)} must set '
                     'securityContext.capabilities.drop=["ALL"]')
    if names:
        parts.append(f"{_who('container', names)} must not include {_quoted(sorted(caps))} "
                     "in securityContext.capabilities.add")
    return f"unrestricted capabilities ({'; '.join(parts)})" if parts else None


def _host_path(_meta: Obj, spec: Obj, _cs: list[Obj]) -> str | None:
    bad = [v["name"] for v in spec.get("volumes") or () if isinstance(v.get("hostPath"), dict)]
    return f"hostPath volumes ({_who('volume', bad)})" if bad else None


def _host_ports(_meta: Obj, _spec: Obj, cs: list[Obj]) -> str | None:
    names, ports = [], []
    for c in cs:
        used = [str(p["hostPort"]) for p in c.get("ports") or () if p.get("hostPort")]
        if used:
            names.append(c["name"])
            ports.extend(used)
    if not names:
        return None
    word = "hostPorts" if len(ports) > 1 else "hostPort"
    return f"hostPort ({_who('container', names)} uses {word} {', '.join(ports)})"


def _proc_mount(_meta: Obj, _spec: Obj, cs: list[Obj]) -> str | None:
    bad = [c["name"] for c in cs if _sc(c).get("procMount") not in (None, "Default")]
    return (f"procMount ({_who('container', bad)} must not set securityContext.procMount to "
            f"{_quoted(sorted({_sc(c)['procMount'] for c in cs if c['name'] in bad}))})"
            ) if bad else None


def _restricted_volumes(_meta: Obj, spec: Obj, _cs: list[Obj]) -> str | None:
    bad: list[tuple[str, str]] = []
    for v in spec.get("volumes") or ():
        kind = next((k for k in v if k != "name"), "")
        if kind not in _RESTRICTED_VOLUMES:
            bad.append((v["name"], kind))
    if not bad:
        return None
    kinds = sorted({k for _, k in bad})
    return (f"restricted volume types ({_who('volume', [n for n, _ in bad])} "
            f"use{'s' if len(bad) == 1 else ''} restricted volume "
            f"type{'s' if len(kinds) > 1 else ''} {_quoted(kinds)})")


def _escalation(_meta: Obj, _spec: Obj, cs: list[Obj]) -> str | None:
    bad = [c["name"] for c in cs if _sc(c).get("allowPrivilegeEscalation") is not False]
    return (f"allowPrivilegeEscalation != false ({_who('container', bad)} must set "
            "securityContext.allowPrivilegeEscalation=false)") if bad else None


def _run_as_non_root(_meta: Obj, spec: Obj, cs: list[Obj]) -> str | None:
    pod = _sc(spec).get("runAsNonRoot")
    if pod is False:
        return "runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false)"
    explicit_false = [c["name"] for c in cs if _sc(c).get("runAsNonRoot") is False]
    unset = [c["name"] for c in cs if _sc(c).get("runAsNonRoot") is None and pod is not True]
    if explicit_false:
        return (f"runAsNonRoot != true ({_who('container', explicit_false)} must not set "
                "securityContext.runAsNonRoot=false)")
    if unset:
        return (f"runAsNonRoot != true (pod or {_who('container', unset)} must set "
                "securityContext.runAsNonRoot=true)")
    return None


def _run_as_user(_meta: Obj, spec: Obj, cs: list[Obj]) -> str | None:
    parts = []
    if _sc(spec).get("runAsUser") == 0:
        parts.append("pod must not set runAsUser=0")
    bad = [c["name"] for c in cs if _sc(c).get("runAsUser") == 0]
    if bad:
        parts.append(f"{_who('container', bad)} must not set runAsUser=0")
    return f"runAsUser=0 ({'; '.join(parts)})" if parts else None


def _seccomp_type(obj: Obj) -> str | None:
    profile = _sc(obj).get("seccompProfile")
    return profile.get("type") if isinstance(profile, dict) else None


def _seccomp_baseline(_meta: Obj, spec: Obj, cs: list[Obj]) -> str | None:
    parts = []
    if _seccomp_type(spec) == "Unconfined":
        parts.append('pod must not set securityContext.seccompProfile.type to "Unconfined"')
    bad = [c["name"] for c in cs if _seccomp_type(c) == "Unconfined"]
    if bad:
        parts.append(f'{_who("container", bad)} must not set '
                     'securityContext.seccompProfile.type to "Unconfined"')
    return f"seccompProfile ({'; '.join(parts)})" if parts else None


def _seccomp_restricted(_meta: Obj, spec: Obj, cs: list[Obj]) -> str | None:
    good = ("RuntimeDefault", "Localhost")
    pod = _seccomp_type(spec)
    parts = []
    if pod is not None and pod not in good:
        parts.append(f'pod must not set securityContext.seccompProfile.type to "{pod}"')
    bad = [c["name"] for c in cs if _seccomp_type(c) not in (*good, None)]
    if bad:
        kinds = sorted({str(_seccomp_type(c)) for c in cs if c["name"] in bad})
        parts.append(f"{_who('container', bad)} must not set "
                     f"securityContext.seccompProfile.type to {_quoted(kinds)}")
    unset = [c["name"] for c in cs if _seccomp_type(c) is None]
    if pod is None and unset:
        parts.append(f"pod or {_who('container', unset)} must set "
                     'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"')
    return f"seccompProfile ({'; '.join(parts)})" if parts else None


def _sysctls(_meta: Obj, spec: Obj, _cs: list[Obj]) -> str | None:
    bad = [s["name"] for s in _sc(spec).get("sysctls") or () if s.get("name") not in
           _SAFE_SYSCTLS]
    return (f"forbidden sysctls ({', '.join(bad)})") if bad else None


# (check, its level), in kube-apiserver's order (by check ID); a restricted check replaces
# the baseline one of the same concern
_CHECKS: tuple[tuple[str, str, Check], ...] = (
    ("allowPrivilegeEscalation", "restricted", _escalation),
    ("capabilities_baseline", "baseline", _capabilities_baseline),
    ("capabilities_restricted", "restricted", _capabilities_restricted),
    ("hostNamespaces", "baseline", _host_namespaces),
    ("hostPathVolumes", "baseline", _host_path),
    ("hostPorts", "baseline", _host_ports),
    ("privileged", "baseline", _privileged),
    ("procMount", "baseline", _proc_mount),
    ("restrictedVolumes", "restricted", _restricted_volumes),
    ("runAsNonRoot", "restricted", _run_as_non_root),
    ("runAsUser", "restricted", _run_as_user),
    ("seccompProfile_baseline", "baseline", _seccomp_baseline),
    ("seccompProfile_restricted", "restricted", _seccomp_restricted),
    ("sysctls", "baseline", _sysctls))
_REPLACED = {"capabilities_baseline", "seccompProfile_baseline"}


def violations(level: str, meta: Obj, spec: Obj) -> list[str]:
    """What a Pod (its metadata and spec) breaks of ``level``, in kube-apiserver's words."""
    if level not in ("baseline", "restricted"):
        return []
    cs = _containers(spec)
    out = []
    for check_id, check_level, check in _CHECKS:
        if check_level == "restricted" and level != "restricted":
            continue
        if level == "restricted" and check_id in _REPLACED:
            continue
        found = check(meta, spec, cs)
        if found:
            out.append(found)
    return out


class PodSecurity:
    """The plugin over the namespaces a lookup gives."""

    def __init__(self, namespace: Callable[[str], Obj | None]) -> None:
        self.namespace = namespace

    def admit(self, group: str, plural: str, operation: str, subresource: str,
              namespace: str, name: str, obj: Obj | None, warnings: list[str]) -> None:
        if operation not in ("CREATE", "UPDATE") or obj is None or subresource or not namespace:
            return
        labels = ((self.namespace(namespace) or {}).get("metadata") or {}).get("labels") or {}
        levels = {mode: (labels.get(_PREFIX + mode), labels.get(f"{_PREFIX}{mode}-version",
                                                               "latest"))
                  for mode in ("enforce", "warn")}
        if _PREFIX + "warn" not in labels:  # PolicyToEvaluate: warn defaults to enforce
            levels["warn"] = levels["enforce"]
        if group == "" and plural == "pods":
            if operation == "UPDATE":
                return  # only a Pod's creation is checked here
            meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
            level, version = levels["enforce"]
            broken = violations(str(level), meta, spec) if level in _LEVELS else []
            if broken:
                raise StatusError.forbidden_because(
                    "pods", name, "", f'violates PodSecurity "{level}:{version}": '
                    + ", ".join(broken))
        else:
            path = _WORKLOADS.get((group, plural))
            if path is None:
                return
            template: Any = obj
            for key in path:
                template = template.get(key) if isinstance(template, dict) else None
            if not isinstance(template, dict):
                return
            meta, spec = template.get("metadata") or {}, template.get("spec") or {}
        level, version = levels["warn"]
        broken = violations(str(level), meta, spec) if level in _LEVELS else []
        if broken:
            warnings.append(f'would violate PodSecurity "{level}:{version}": '
                            + ", ".join(broken))
