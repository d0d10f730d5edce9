"""What ``init`` and ``create kind`` refuse: bad names, a directory that is not empty or
not a project, a kind the project has, a registry edited by hand. Each refusal is one
line naming the problem, exit status 2, and nothing written; a failed manifests step is
status 1 and says what to run."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from reconcilekit.__main__ import main
from reconcilekit._scaffold.api_names import (
    ScaffoldError,
    check_kind,
    check_plural,
    default_plural,
)
from reconcilekit._scaffold.new_kind import create_kind
from reconcilekit._scaffold.new_project import FirstKind, init_project

BIN = Path(sys.executable).parent


def scaffold(*argv: str) -> int:
    """``python -m reconcilekit ARGV``, in this process."""
    return main(list(argv))


def snapshot(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): p.read_text() for p in sorted(directory.rglob("*"))
            if p.is_file()}


def project(directory: Path) -> Path:
    """A project with the kind Website, written without generating its manifests."""
    init_project(directory, domain="example.com", first=FirstKind("web", "v1", "Website"))
    return directory


KIND = ("--group", "web", "--version", "v1", "--kind", "Website")


def kind(kind: str = "Website", group: str = "web", version: str = "v1",
         domain: str = "example.com") -> tuple[str, ...]:
    """``init``'s arguments for a project with a first kind."""
    return ("--domain", domain, "--group", group, "--version", version, "--kind", kind)


@pytest.mark.parametrize(("argv", "message"), [
    (("--domain", "example"), "--domain 'example' needs a dot"),
    (("--domain", "Example.com"), "--domain 'Example.com' is not a DNS subdomain"),
    (("--domain", "example.com", "--group", "web"),
     "give --group, --version and --kind together"),
    (("--domain", "example.com", "--plural", "sites"),
     "give --group, --version and --kind together"),
    (kind("website"), "--kind 'website' is not PascalCase"),
    (kind("WEB"), "--kind 'WEB' is not PascalCase"),
    (kind("Import"), "gives the module name 'import', a Python keyword"),
    (kind("Manager"), "--kind 'Manager' would shadow a name the generated code uses"),
    (kind(version="1"), "--version '1' is not a Kubernetes API version"),
    (kind(version="v1beta"), "--version 'v1beta' is not a Kubernetes API version"),
    (kind(group="Web"), "--group 'Web' is not a DNS subdomain"),
    (kind(group="web.example.com"), "give --group web"),
    (kind(group="apps", domain="k8s.io"), "is one of Kubernetes' own"),
    ((*kind(), "--plural", "web-sites"), "--plural 'web-sites' is not a resource name"),
    ((*kind(), "--plural", "website"), "is the kind's singular name"),
    (("--domain", "example.com", "--name", "My_Operator"),
     "the project name 'My_Operator' is not usable"),
    (("--domain", "example.com", "--package", "json"),
     "the package name 'json' would shadow the module of that name"),
    (("--domain", "example.com", "--package", "my-op"),
     "the package name 'my-op' is not a Python identifier"),
])
def test_init_refuses_bad_names_before_writing_anything(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...],
        message: str) -> None:
    target = tmp_path / "my-operator"
    assert scaffold("init", str(target), *argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1, err
    assert not target.exists()


def test_init_wants_an_empty_or_new_directory(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    assert scaffold("init", str(tmp_path / "taken"), "--domain", "example.com") == 2
    assert "is not empty (notes.txt)" in capsys.readouterr().err
    assert snapshot(tmp_path / "taken") == {"notes.txt": "mine"}
    (tmp_path / "file").write_text("")
    assert scaffold("init", str(tmp_path / "file"), "--domain", "example.com") == 2
    assert "is not a directory" in capsys.readouterr().err
    # a repository made first is fine; the project is named after the directory
    (tmp_path / "repo-op" / ".git").mkdir(parents=True)
    record, written = init_project(tmp_path / "repo-op", domain="example.com")
    assert (record.name, record.package, record.kinds) == ("repo-op", "repo_op", ())
    assert "repo_op/registry.py" in {str(p) for p in written}


def test_create_kind_refuses_what_would_clash_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert scaffold("create", "kind", "--dir", str(tmp_path), *KIND) == 2
    assert "is not a reconcilekit project (no PROJECT.toml)" in capsys.readouterr().err
    root = project(tmp_path / "op")
    create_kind(root, group="dns", version="v1", kind="DNSRecord", plural=None)
    before = snapshot(root)
    for argv, message in [
            (KIND, "the project has a kind Website already, in web.example.com/v1 (create "
                   "kind does not add a second version"),
            (("--group", "blog", "--version", "v1", "--kind", "Website"),
             "the project has a kind Website already, in web.example.com/v1\n"),
            (("--group", "web", "--version", "v2", "--kind", "DnsRecord"),
             "DnsRecord's modules would be named dns_record, as DNSRecord's are"),
            (("--group", "web", "--version", "v2", "--kind", "Site", "--plural", "websites"),
             "the project has the resource websites.web.example.com already (Website)")]:
        assert scaffold("create", "kind", "--dir", str(root), *argv) == 2
        assert message in capsys.readouterr().err
    (root / "tests" / "test_blog.py").write_text("mine")
    assert scaffold("create", "kind", "--dir", str(root), "--group", "web", "--version", "v1",
                    "--kind", "Blog") == 2
    assert "Blog's files exist already" in capsys.readouterr().err
    (root / "tests" / "test_blog.py").unlink()
    assert snapshot(root) == before


def test_create_kind_leaves_a_registry_edited_by_hand_alone(tmp_path: Path) -> None:
    root = project(tmp_path / "op")
    registry = root / "op" / "registry.py"
    registry.write_text(registry.read_text() + "EXTRA = 1\n")
    before = snapshot(root)
    with pytest.raises(ScaffoldError, match=r"registry\.py is not as reconcilekit wrote it"):
        create_kind(root, group="web", version="v1", kind="Blog", plural=None)
    registry.unlink()
    with pytest.raises(ScaffoldError, match=r"registry\.py is missing"):
        create_kind(root, group="web", version="v1", kind="Blog", plural=None)
    registry.write_text(before["op/registry.py"])
    assert snapshot(root) == before


@pytest.mark.parametrize(("edit", "message"), [
    (("layout = 1", "layout = 2"), "layout 2 is not the one this reconcilekit writes (1)"),
    (('kind = "Website"', 'kind = "website"'), "--kind 'website' is not PascalCase"),
    (('group = "web.example.com"', 'group = "web.other.org"'),
     "the group 'web.other.org' of Website is not in the domain 'example.com'"),
    (('package = "op"', "package = 3"), "package is not a string"),
    (('name = "op"', 'name = "op'), "cannot read"),
])
def test_a_record_edited_into_nonsense_is_refused_naming_the_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: tuple[str, str],
        message: str) -> None:
    root = project(tmp_path / "op")
    record = root / "PROJECT.toml"
    assert edit[0] in record.read_text()
    record.write_text(record.read_text().replace(*edit))
    assert scaffold("create", "kind", "--dir", str(root), "--group", "web", "--version", "v1",
                    "--kind", "Blog") == 2
    err = capsys.readouterr().err
    assert f"{record}" in err and message in err, err


def test_a_failed_manifests_step_is_status_1_and_says_what_to_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = project(tmp_path / "op")
    (root / "op" / "manager.py").write_text("raise RuntimeError('broken on purpose')\n")
    assert scaffold("create", "kind", "--dir", str(root), "--group", "web", "--version", "v1",
                    "--kind", "Blog") == 1
    err = capsys.readouterr().err
    assert "the manifests were not generated" in err and "broken on purpose" in err
    assert "python -m reconcilekit manifests op.manager:build --out manifests" in err
    assert (root / "op" / "controllers" / "blog.py").exists()  # what was written stays


def test_names_at_their_longest_still_give_ruff_clean_code(tmp_path: Path) -> None:
    """The length limits of api_names keep every generated line within 100 characters."""
    root = tmp_path / "op"
    init_project(root, domain="d" * 40 + ".example.com", name="n" * 56, package="p" * 32,
                 first=FirstKind("g" * 27, "v1234567alpha123", "A" + "b" * 39))
    create_kind(root, group="g" * 27, version="v1", kind="ABcDeFgHiJkLmNoPqRsTuV",
                plural="z" * 41)
    done = subprocess.run([BIN / "ruff", "check", "--no-cache", "."], cwd=root,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(("kind", "plural"), [
    ("Website", "websites"), ("Policy", "policies"), ("Gateway", "gateways"),
    ("Box", "boxes"), ("Status", "statuses"), ("Batch", "batches"), ("DNSRecord", "dnsrecords"),
])
def test_the_default_plural_is_kubebuilders(kind: str, plural: str) -> None:
    assert default_plural(kind) == plural


def test_a_kind_cannot_take_a_name_its_generated_modules_use(tmp_path: Path) -> None:
    """Every capitalized name the kind's modules import or define, but for the kind's own,
    is refused as a kind (or, in capitals, as a plural): it would be shadowed."""
    root = project(tmp_path / "op")
    own = {"Website", "WebsiteSpec", "WebsiteStatus", "WebsiteReconciler", "WEBSITES",
           "WEBSITES_KIND"}
    names: set[str] = set()
    for path in ("op/kinds/website.py", "op/controllers/website.py", "tests/test_website.py"):
        for node in ast.parse((root / path).read_text()).body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                names |= {alias.asname or alias.name for alias in node.names}
            elif isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    used = {name for name in names - own if name[:1].isupper()}
    assert {"Manager", "FINALIZER", "RESOURCE", "ObjectMeta"} <= used
    for name in sorted(used):
        plural = name.removesuffix("_KIND").lower()  # PLURAL and PLURAL_KIND come of it
        if name.isupper() and "_" in plural:
            continue  # no plural spells it: a plural has no "_"
        with pytest.raises(ScaffoldError, match="would shadow"):
            if name.isupper():
                check_plural(plural, "Widget")
            else:
                check_kind(name)
