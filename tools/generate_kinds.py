"""Generate :mod:`reconcilekit.kinds` from kube-apiserver's discovery and OpenAPI v3.

Usage: ``python tools/generate_kinds.py [--check]``

Reads what ``tools/capture_builtin_api.py`` and ``tools/capture_openapi_v3.py``
captured from kube-apiserver v1.28.7 (the in-process API server's package
data) and writes ``reconcilekit/kinds/``: one module per Go API package
(``core_v1``, ``apps_v1``, ``meta_v1``, ...) holding a ``TypedDict`` per
OpenAPI schema and a :class:`~reconcilekit.TypedResource` per resource that
discovery lists, and ``__init__`` re-exporting the preferred version of
each. To follow a new Kubernetes release: capture again, then run this.

``--check`` writes nothing and exits 1 when the committed modules differ
from what would be written (the test suite runs it).

The mapping: ``string`` is ``str`` (``Literal`` of its enum when it has
one), ``integer`` ``int``, ``number`` ``float``, ``boolean`` ``bool``,
``array`` ``list``, an object with ``additionalProperties`` a ``dict``, an
object with neither properties nor additionalProperties ``dict[str, Any]``,
``int-or-string`` ``int | str``; ``Quantity``, ``Time`` and ``MicroTime``
are ``str`` (as the server sends them). A schema's ``required`` fields are
required keys, all others ``NotRequired``. Python keywords and other names that
are not identifiers (``continue``, ``from``, ``$ref``) use the functional
``TypedDict`` syntax, whose keys are any string.
"""

from __future__ import annotations

import argparse
import gzip
import json
import keyword
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "reconcilekit" / "testing" / "apiserver" / "data"
DISCOVERY = DATA / "kube-apiserver-1.28-discovery.json"
OPENAPI = DATA / "kube-apiserver-1.28-openapi-v3.json.gz"
OUT = ROOT / "reconcilekit" / "kinds"

# Schemas that are scalars on the wire, whatever their OpenAPI says.
_ALIASES = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": ("Quantity", "str"),
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": ("Time", "str"),
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": ("MicroTime", "str"),
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": ("IntOrString", "int | str"),
    "io.k8s.apimachinery.pkg.runtime.RawExtension": ("RawExtension", "dict[str, Any]"),
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": ("FieldsV1", "dict[str, Any]"),
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch": ("Patch", "dict[str, Any]"),
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON": ("JSON", "Any"),
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray":
        ("JSONSchemaPropsOrArray", "Any"),
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool":
        ("JSONSchemaPropsOrBool", "Any"),
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray":
        ("JSONSchemaPropsOrStringArray", "Any"),
}


def module_of(schema_name: str) -> str:
    """``io.k8s.api.core.v1.Pod`` -> ``core_v1``; apimachinery's types go to ``meta_v1``."""
    package = schema_name.rsplit(".", 1)[0]
    if package.startswith("io.k8s.apimachinery."):
        return "meta_v1"
    *_, group, version = package.split(".")
    return f"{group}_{version}"


def module_of_group_version(group: str, version: str) -> str:
    return f"{group.split('.')[0] if group else 'core'}_{version}"


def constant_name(kind: str, plural: str) -> str:
    """``ConfigMap``/``configmaps`` -> ``CONFIG_MAPS``: the plural cut at the kind's words."""
    words = re.findall(r"[A-Z]+(?=[A-Z][a-z]|$)|[A-Z][a-z0-9]*", kind)
    parts, rest = [], plural
    for word in words[:-1]:
        if not rest.startswith(word.lower()):
            return plural.upper()
        parts.append(word)
        rest = rest[len(word):]
    parts.append(rest)
    return "_".join(p.upper() for p in parts if p)


@dataclass
class Module:
    name: str
    typed_dicts: dict[str, str] = field(default_factory=dict)  # class name -> source
    aliases: dict[str, str] = field(default_factory=dict)
    resources: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    """constant -> (the Resource's arguments, its shape's schema name or None)"""
    imports: set[str] = field(default_factory=set)            # other kinds modules
    uses_literal: bool = False


class Generator:
    def __init__(self, discovery: Mapping[str, Any], schemas: Mapping[str, Any]) -> None:
        self.discovery = discovery
        self.schemas = schemas
        self.modules: dict[str, Module] = {}

    def module(self, name: str) -> Module:
        return self.modules.setdefault(name, Module(name))

    # -- types ----------------------------------------------------------------------------

    def ref(self, target: str, within: Module) -> str:
        if target in _ALIASES:
            name = _ALIASES[target][0]
        elif target not in self.schemas:
            return "dict[str, Any]"  # not in the capture: an object of unknown shape
        else:
            name = target.rsplit(".", 1)[1]
        home = module_of(target)
        if home != within.name:
            within.imports.add(home)
            return f"{home}.{name}"
        return name

    def annotation(self, schema: Mapping[str, Any], within: Module) -> str:
        if "$ref" in schema:
            return self.ref(schema["$ref"], within)
        if schema.get("allOf"):
            return self.annotation(schema["allOf"][0], within)
        if schema.get("format") == "int-or-string" or schema.get("x-kubernetes-int-or-string"):
            return "int | str"
        kind = schema.get("type")
        if kind == "string":
            if schema.get("enum"):
                within.uses_literal = True
                return "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]"
            return "str"
        if kind == "integer":
            return "int"
        if kind == "number":
            return "float"
        if kind == "boolean":
            return "bool"
        if kind == "array":
            return f"list[{self.annotation(schema.get('items') or {}, within)}]"
        if kind == "object" or kind is None:
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                return f"dict[str, {self.annotation(extra, within)}]"
            return "dict[str, Any]"
        raise ValueError(f"an OpenAPI type this generator does not know: {schema!r}")

    def add_schema(self, name: str, schema: Mapping[str, Any]) -> None:
        module = self.module(module_of(name))
        if name in _ALIASES:
            alias, target = _ALIASES[name]
            module.aliases[alias] = target
            return
        short = name.rsplit(".", 1)[1]
        properties = schema.get("properties") or {}
        if not properties:
            module.aliases[short] = self.annotation(schema, module)
            return
        required = set(schema.get("required") or ())
        fields = {}
        for key in sorted(properties):
            inner = self.annotation(properties[key], module)
            fields[key] = inner if key in required else f"NotRequired[{inner}]"
        gvk = schema.get("x-kubernetes-group-version-kind") or []
        doc = (f'    """{gvk[0]["kind"]}, {_api_version(gvk[0])}."""\n' if len(gvk) == 1
               else "")
        if all(k.isidentifier() and not keyword.iskeyword(k) for k in fields):
            body = "".join(f"    {k}: {v}\n" for k, v in fields.items())
            source = f"class {short}(TypedDict):\n{doc}{body}"
        else:  # the functional syntax takes any key; its values are forward references
            body = "".join(f"    {json.dumps(k)}: {json.dumps(v)},\n" for k, v in fields.items())
            source = f"{short} = TypedDict({json.dumps(short)}, {{\n{body}}})\n"
        module.typed_dicts[short] = source

    # -- resources ------------------------------------------------------------------------

    def kinds_by_gvk(self) -> dict[tuple[str, str, str], str]:
        out = {}
        for name, schema in self.schemas.items():
            for gvk in schema.get("x-kubernetes-group-version-kind") or ():
                out[gvk["group"], gvk["version"], gvk["kind"]] = name
        return out

    def add_resources(self) -> None:
        shapes = self.kinds_by_gvk()
        for gv, entries in self.discovery["resources"].items():
            group, _, version = gv.rpartition("/")
            module = self.module(module_of_group_version(group, version))
            for entry in entries:
                if "/" in entry["name"]:
                    continue
                kind, plural = entry["kind"], entry["name"]
                constant = constant_name(kind, plural)
                args = (f"{json.dumps(group)}, {json.dumps(version)}, {json.dumps(kind)}, "
                        f"{json.dumps(plural)}"
                        + ("" if entry["namespaced"] else ", namespaced=False"))
                module.resources[constant] = (args, shapes.get((group, version, kind)))

    def resource_line(self, constant: str, args: str, shape: str | None,
                      within: Module) -> str:
        if shape is None:
            return f"{constant}: Final[Resource] = Resource({args})"
        return (f"{constant}: Final[TypedResource[{self.ref(shape, within)}]] = "
                f"TypedResource({args})")

    def run(self) -> dict[str, str]:
        for name in sorted(self.schemas):
            self.add_schema(name, self.schemas[name])
        self.add_resources()
        files = {f"{m.name}.py": render(self, m) for m in list(self.modules.values())}
        files.update(self.render_init())
        return files

    # -- the package ----------------------------------------------------------------------

    def preferred_modules(self) -> list[str]:
        order = ["core_v1"]
        for group in self.discovery["groups"]:
            preferred = group["preferredVersion"]["version"]
            order.append(module_of_group_version(group["name"], preferred))
        return ["meta_v1"] + [m for m in order if m in self.modules]

    def render_init(self) -> dict[str, str]:
        """``_preferred`` (the preferred versions' resources, cheap to import) and
        ``__init__``, which loads a module of shapes only when one of its names is used."""
        seen: set[str] = set()
        resources = Module("_preferred")
        lazy: dict[str, str] = {}
        for name in self.preferred_modules():
            module = self.modules[name]
            for constant, spec in sorted(module.resources.items()):
                if constant not in seen:
                    seen.add(constant)
                    resources.resources[constant] = spec
            shapes = [n for n in module.typed_dicts if name == "meta_v1"
                      or _is_kind(self, name, n)]
            for n in sorted(shapes):
                if n not in seen and n not in _NOT_AT_TOP:
                    seen.add(n)
                    lazy[n] = name
        modules = sorted(self.modules)
        resource_text = render(self, resources, doc="The preferred version of every "
                                    "built-in resource (``reconcilekit.kinds`` exports them).")
        checking = "".join(f"    from . import {m} as {m}\n" for m in modules) + "".join(
            f"    from .{m} import {n} as {n}\n" for n, m in sorted(lazy.items()))
        init = (_HEADER + '"""Every built-in resource and kind of Kubernetes v1.28, typed.\n\n'
                + _INIT_DOC + '"""\n\nfrom __future__ import annotations\n\n'
                + "import importlib as _importlib\nimport typing as _typing\n\n"
                + "".join(f"from ._preferred import {c} as {c}\n"
                          for c in sorted(resources.resources))
                + "\nif _typing.TYPE_CHECKING:\n" + checking
                + "\n_SHAPES = {\n" + "".join(f"    {json.dumps(n)}: {json.dumps(m)},\n"
                                               for n, m in sorted(lazy.items())) + "}\n"
                + "_MODULES = frozenset({\n" + "".join(f"    {json.dumps(m)},\n"
                                                      for m in modules) + "})\n"
                + _GETATTR + "\n__all__ = [\n"
                + "".join(f"    {json.dumps(n)},\n"
                          for n in sorted([*resources.resources, *lazy])) + "]\n")
        return {"__init__.py": init, "_preferred.py": resource_text}

# Shapes the package itself does not re-export, because reconcilekit's root means
# something else by the name: ``reconcilekit.LabelSelector`` is a parsed selector, the
# shape is ``reconcilekit.kinds.meta_v1.LabelSelector``.
_NOT_AT_TOP = frozenset({"LabelSelector"})


def _api_version(gvk: Mapping[str, str]) -> str:
    return f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]


def _is_kind(gen: Generator, module: str, name: str) -> bool:
    """A top-level kind (it has a group-version-kind) of this module."""
    return any(module_of(s) == module and s.rsplit(".", 1)[1] == name
               and gen.schemas[s].get("x-kubernetes-group-version-kind")
               for s in gen.schemas)


_HEADER = ("# Generated by tools/generate_kinds.py from kube-apiserver v1.28.7's discovery and\n"
           "# OpenAPI v3. Do not edit: run the generator.\n")
_INIT_DOC = """\
Each built-in resource is a :class:`~reconcilekit.TypedResource` constant named
after its plural (``PODS``, ``DEPLOYMENTS``, ``CONFIG_MAPS``,
``CUSTOM_RESOURCE_DEFINITIONS``), and each kind's object shape a ``TypedDict``
named after the kind (``Pod``, ``Deployment``). This package re-exports the
preferred version of every group (for a name two groups share, such as
``EVENTS``, the core group's); every version is in its own module
(``reconcilekit.kinds.events_v1.EVENTS``, ``reconcilekit.kinds.autoscaling_v1``).

The shapes are for the type checker only: objects stay the plain dicts the
API server sends (a ``TypedDict`` is a ``dict`` at run time), and reads of a
``TypedResource[Pod]`` through the cache or the client are typed ``Pod``, so
``mypy --strict`` rejects ``pod["spec"]["containres"]``.
"""


_GETATTR = """

if not _typing.TYPE_CHECKING:  # type checkers read the imports above: no name is Any

    def __getattr__(name: str) -> _typing.Any:
        \"\"\"Import a module of shapes on first use: the shapes cost time to build, the
        resources above almost none.\"\"\"
        if name in _MODULES:
            return _importlib.import_module(f"{__name__}.{name}")
        module = _SHAPES.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(_importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value
"""


def render(gen: Generator, module: Module, doc: str | None = None) -> str:
    body = []
    for alias, target in sorted(module.aliases.items()):
        body.append(f"\n{alias}: TypeAlias = {json.dumps(target) if '.' in target else target}\n")
    for _, source in sorted(module.typed_dicts.items()):
        body.append("\n\n" + source)
    if module.resources:
        body.append("\n\n" + "\n".join(gen.resource_line(c, args, shape, module)
                                         for c, (args, shape) in sorted(module.resources.items()))
                    + "\n")
    text = "".join(body)
    typing_names = [n for n in ("Any", "Final", "Literal", "NotRequired", "TypeAlias",
                                "TypedDict") if re.search(rf"\b{n}\b", text)]
    objects = [n for n in ("Resource", "TypedResource") if re.search(rf"\b{n}\(", text)]
    checking_only = module.name == "_preferred"  # its shapes are for the type checker only
    if checking_only and module.imports:
        typing_names.insert(0, "TYPE_CHECKING")
    doc = doc or f"The built-in API package {module.name}: its kinds, typed."
    head = [_HEADER, f'"""{doc}"""\n\n', "from __future__ import annotations\n\n",
            f"from typing import {', '.join(typing_names)}\n"]
    if objects or module.imports:
        head.append("\n")
    if objects:
        head.append(f"from .._foundations.objects import {', '.join(objects)}\n")
    siblings = ", ".join(sorted(module.imports))
    if checking_only and module.imports:
        head.append(f"\nif TYPE_CHECKING:\n    from . import {siblings}\n")
    elif module.imports:
        head.append(f"from . import {siblings}\n")
    head.append("\n__all__ = [\n" + "".join(
        f"    {json.dumps(n)},\n" for n in sorted([*module.aliases, *module.typed_dicts,
                                                  *module.resources])) + "]\n")
    return "".join(head) + text


def generate() -> dict[str, str]:
    discovery = json.loads(DISCOVERY.read_text())
    schemas = json.loads(gzip.decompress(OPENAPI.read_bytes()))["schemas"]
    files = Generator(discovery, schemas).run()
    return files


def _changed(files: Mapping[str, str]) -> Iterator[str]:
    on_disk = {p.name for p in OUT.glob("*.py")}
    for name, text in files.items():
        path = OUT / name
        if not path.exists() or path.read_text() != text:
            yield name
    yield from sorted(on_disk - set(files))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if reconcilekit/kinds is not up to date")
    args = parser.parse_args(argv)
    files = generate()
    changed = list(_changed(files))
    if args.check:
        if changed:
            print(f"reconcilekit/kinds is not what tools/generate_kinds.py writes: "
                  f"{', '.join(changed)}; run python tools/generate_kinds.py", file=sys.stderr)
            return 1
        return 0
    OUT.mkdir(exist_ok=True)
    for name in sorted({p.name for p in OUT.glob("*.py")} - set(files)):
        (OUT / name).unlink()
    for name, text in files.items():
        (OUT / name).write_text(text)
    print(f"wrote {len(files)} modules to {OUT.relative_to(ROOT)}"
          + (f" ({len(changed)} changed)" if changed else " (unchanged)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
