"""The names a project and its kinds take, checked before anything is written.

Each check returns the name it accepts (or derives) and raises
:class:`ScaffoldError` naming the bad value and what would do. The rules are
the API server's (a CRD's group, version, kind and plural; a namespace's
name) and Python's (a package and a module must be importable identifiers),
plus one of the generated code's own: a kind may not take a name that code
imports or defines next to it.
"""

from __future__ import annotations

import keyword
import re
import sys
from typing import Final

__all__ = [
    "ScaffoldError",
    "check_domain",
    "check_group",
    "check_kind",
    "check_package",
    "check_plural",
    "check_project_name",
    "check_version",
    "default_plural",
    "module_name",
]

_DNS_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_KIND: Final = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_VERSION: Final = re.compile(r"^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$")
_PLURAL: Final = re.compile(r"^[a-z][a-z0-9]*$")
_WORD_BREAK: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# The names the generated kind, controller and test modules import or define beside a kind's
# own (its class, `<Kind>Spec`, `<Kind>Status`, `<Kind>Reconciler`, `<PLURAL>`,
# `<PLURAL>_KIND`): a kind or plural spelled like one would shadow it.
_TAKEN: Final = frozenset({
    "AlreadyOwnedError", "Annotated", "AsyncIterator", "CONFIG_MAPS", "Cache",
    "CleanupDone", "CleanupResult", "Client", "Cluster", "Condition", "ConfigMap",
    "CustomKind", "Description", "FINALIZER", "GROUP", "Manager", "NotFound", "NotRequired",
    "ObjectMeta",
    "Permission", "PrinterColumn", "RESOURCE", "Reconciler", "Request", "Result",
    "TypedDict", "Version",
})
# Lengths that keep every generated line within ruff's 100 characters.
MAX_KIND: Final = 40
MAX_MODULE: Final = 40
MAX_PLURAL: Final = 41
MAX_GROUP: Final = 80
MAX_VERSION: Final = 16
MAX_PACKAGE: Final = 32
MAX_NAME: Final = 56  # and "-system" makes a namespace of at most 63

# Protected API groups: kube-apiserver wants an api-approved.kubernetes.io annotation for them.
_PROTECTED: Final = ("k8s.io", "kubernetes.io")


class ScaffoldError(Exception):
    """What a scaffolding command cannot do, worded for its user.

    ``status`` is the command's exit status: 2 for bad arguments or a directory
    that cannot be used (nothing was written), 1 for a step that failed.
    """

    def __init__(self, message: str, *, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def _dns_subdomain(value: str, what: str) -> str:
    labels = value.split(".")
    if (not value or len(value) > 253
            or not all(_DNS_LABEL.match(label) and len(label) <= 63 for label in labels)):
        raise ScaffoldError(f"{what} {value!r} is not a DNS subdomain: lower-case letters, "
                            "digits and '-', in labels of at most 63 characters joined by "
                            "'.' (e.g. example.com)")
    return value


def check_domain(domain: str) -> str:
    """The project's domain, the suffix of its kinds' API groups (``example.com``)."""
    _dns_subdomain(domain, "--domain")
    if "." not in domain:
        raise ScaffoldError(f"--domain {domain!r} needs a dot: an API group is a domain "
                            "name (e.g. example.com)")
    return domain


def check_group(group: str, domain: str) -> str:
    """The full API group of a kind: ``group`` (``web``) and the domain after it."""
    _dns_subdomain(group, "--group")
    if group == domain or group.endswith(f".{domain}"):
        short = group.removesuffix(domain).rstrip(".") or "web"
        raise ScaffoldError(f"--group {group!r} already ends with the domain {domain!r}, "
                            f"which is added to it: give --group {short}")
    full = f"{group}.{domain}"
    _dns_subdomain(full, "the API group")
    if len(full) > MAX_GROUP:
        raise ScaffoldError(f"the API group {full!r} is longer than {MAX_GROUP} characters")
    if any(full == p or full.endswith(f".{p}") for p in _PROTECTED):
        raise ScaffoldError(f"the API group {full!r} is one of Kubernetes' own (*.k8s.io, "
                            "*.kubernetes.io): use a domain of your own")
    return full


def check_version(version: str) -> str:
    """A Kubernetes API version: ``v1``, ``v1alpha1``, ``v2beta3``."""
    if not _VERSION.match(version) or len(version) > MAX_VERSION:
        raise ScaffoldError(f"--version {version!r} is not a Kubernetes API version: v, a "
                            "number, then optionally alpha or beta and a number (v1, "
                            "v1alpha1, v2beta3), at most 16 characters")
    return version


def check_kind(kind: str) -> str:
    """A kind's name in PascalCase (``Website``, ``DNSRecord``) that the generated code can
    use as a class name and turn into a module name."""
    if not _KIND.match(kind) or not any(c.islower() for c in kind):
        raise ScaffoldError(f"--kind {kind!r} is not PascalCase: a capital letter, then "
                            "letters and digits with lower case among them (e.g. Website, "
                            "DNSRecord)")
    if len(kind) > MAX_KIND or len(module_name(kind)) > MAX_MODULE:
        raise ScaffoldError(f"--kind {kind!r} is too long: at most {MAX_KIND} characters, "
                            f"and {MAX_MODULE} as a module name ({module_name(kind)})")
    if kind in _TAKEN:
        raise ScaffoldError(f"--kind {kind!r} would shadow a name the generated code uses: "
                            "choose another name")
    module = module_name(kind)
    if keyword.iskeyword(module):
        raise ScaffoldError(f"--kind {kind!r} gives the module name {module!r}, a Python "
                            "keyword: choose another name")
    return kind


def module_name(kind: str) -> str:
    """The module of a kind in snake case: ``Website`` -> ``website``, ``DNSRecord`` ->
    ``dns_record``."""
    return _WORD_BREAK.sub("_", kind).lower()


def default_plural(kind: str) -> str:
    """The resource name of a kind as kubebuilder makes it: its name in lower case, made
    plural by the regular English rules (``Policy`` -> ``policies``, ``Box`` -> ``boxes``)."""
    lower = kind.lower()
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return f"{lower}es"
    if lower.endswith("y") and lower[-2:-1] not in ("a", "e", "i", "o", "u"):
        return f"{lower[:-1]}ies"
    return f"{lower}s"


def check_plural(plural: str, kind: str) -> str:
    """A resource name: lower-case letters and digits, starting with a letter (the CRD's
    ``plural``; its constant in the generated code is the plural in upper case)."""
    if not _PLURAL.match(plural) or len(plural) > MAX_PLURAL:
        raise ScaffoldError(f"--plural {plural!r} is not a resource name: lower-case letters "
                            f"and digits, starting with a letter, at most {MAX_PLURAL} "
                            "characters")
    if plural == kind.lower():
        raise ScaffoldError(f"--plural {plural!r} is the kind's singular name: give its "
                            "plural")
    if plural.upper() in _TAKEN or f"{plural.upper()}_KIND" in _TAKEN:
        raise ScaffoldError(f"--plural {plural!r} would shadow a name the generated code "
                            "uses: choose another")
    return plural


def check_project_name(name: str) -> str:
    """The project's name: its distribution name, its manager's name (its roles and Lease)
    and, with ``-system``, the namespace it runs in; so a DNS label."""
    if not _DNS_LABEL.match(name) or not name[0].isalpha() or len(name) > MAX_NAME:
        raise ScaffoldError(f"the project name {name!r} is not usable: it names the operator "
                            "on the cluster, so lower-case letters, digits and '-', starting "
                            f"with a letter, at most {MAX_NAME} characters (give --name)")
    return name


def check_package(package: str) -> str:
    """The project's Python package: an identifier that shadows nothing it imports."""
    if not package.isidentifier() or not package.isascii() or keyword.iskeyword(package):
        raise ScaffoldError(f"the package name {package!r} is not a Python identifier "
                            "(give --package)")
    if len(package) > MAX_PACKAGE:
        raise ScaffoldError(f"the package name {package!r} is longer than {MAX_PACKAGE} "
                            "characters (give --package)")
    if package != package.lower():
        raise ScaffoldError(f"the package name {package!r} has capitals: Python packages "
                            "are lower case (give --package)")
    if package in sys.stdlib_module_names or package in ("reconcilekit", "tests", "test"):
        raise ScaffoldError(f"the package name {package!r} would shadow the module of that "
                            "name (give --package)")
    return package
