"""Normalization of kubectl's output before the two servers' answers are compared.

:func:`normalize` replaces what legitimately differs between two API servers
answering the same requests, and nothing else:

* the test namespace's name (``<NS>``), the server's address (``<SERVER>``);
* uids (``<UID>``), resourceVersions (``<RV>``; in objects and in
  ``kubectl describe``'s "Resource Version:"), RFC 3339 and RFC 1123
  timestamps, managedFields times included (``<TIME>``);
* cluster IPs from the service range both servers use, 10.0.0.0/24
  (``<CLUSTER-IP>``);
* service account tokens (JWTs, ``<TOKEN>``);
* Go pointers kube-apiserver prints inside some validation messages
  (``(0xc00a7e0420)``, ``(<POINTER>)``);
* the non-breaking spaces Go's ``cmp.Diff`` writes at random (once per
  process) after a line's ``-``, ``+`` or indent in the diffs some validation
  messages hold, shown as the plain spaces it writes otherwise;
* names the server generates from a ``generateName`` prefix the session gives
  (``prefix<GEN>``);
* the date, time and process id of kubectl's own log lines
  (``W1128 17:35:25.849001    1681 diff.go:714]``, ``W<KLOG> diff.go:714]``);
* ``kubectl diff``'s temporary directories and the times in its headers, and
  the other times Go's ``time.Time.String`` prints (``describe``'s
  ``Created on:``);
* the order of a 422's causes (kubectl's ``* field: message`` lines, sorted):
  kube-apiserver lists a custom resource's schema errors in Go's map order,
  which changes from run to run;
* in tables (a header line of upper-case column names): ages such as ``5s``
  or ``2m30s`` in AGE-like columns (``<AGE>``), and the column padding, which
  follows the widest cell (columns are cut at the header's offsets and joined
  with three spaces). Tables are re-laid out first, before any replacement
  changes a cell's width (a name holding the namespace's).

Everything else (messages, field values, exit codes, column names, order) is
kept as kubectl printed it, so a real difference stays visible.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["normalize", "normalize_tables"]

_SERVER = re.compile(r"https?://(?:127\.0\.0\.1|localhost|\[::1\]):\d+")
_JWT = re.compile(r"\beyJ[\w-]+\.eyJ[\w-]+\.[\w-]+")
_UID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_RFC3339 = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")
_RFC1123 = re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (?:Jan|Feb|Mar|Apr|May|Jun|"
                      r"Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d [+-]\d{4}")
_GO_TIME = re.compile(r"\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? [+-]\d{4}")
_DIFF_DIR = re.compile(r"/(?:tmp|var/tmp)/(LIVE|MERGED)-\d+")
_RESOURCE_VERSION = re.compile(r'("?resourceVersion"?\s*[:=]\s*)"?\d+"?')
_DESCRIBED_VERSION = re.compile(r"(Resource Version:\s+)\d+")
_KLOG = re.compile(r"^([IWEF])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ ", re.M)
_CMP_MARK = re.compile(r"^(?=.?\u00a0)[ \u00a0+-][ \u00a0]", re.M)
_GO_POINTER = re.compile(r"\(0x[0-9a-f]{6,16}\)")
_CLUSTER_IP = re.compile(r"(?<![\d.])10\.0\.0\.(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\d.])")
_AGE_VALUE = re.compile(r"(?:\d+[smhdy])+|<invalid>")
_AGE_COLUMNS = frozenset({"AGE", "DURATION", "LAST SCHEDULE", "CREATED AT"})
_HEADER = re.compile(r"(?:NAME|NAMESPACE)(?: {3,}[A-Z][A-Z0-9_./()-]*(?: [A-Z0-9_./()-]+)*)*")
# the characters of a name Kubernetes makes from generateName (utilrand.String)
_GENERATED = "[bcdfghjklmnpqrstvwxz2456789]{5}"


def normalize(text: str, namespace: str, generate_names: Iterable[str] = ()) -> str:
    """``text`` (kubectl's stdout or stderr) with the legitimately random parts replaced.

    ``namespace`` is the test namespace's name; ``generate_names`` are the
    ``generateName`` prefixes the session's manifests use.
    """
    text = normalize_tables(text)  # first: cells are cut where kubectl laid them out
    if namespace:
        text = text.replace(namespace, "<NS>")
    text = _SERVER.sub("<SERVER>", text)
    text = _JWT.sub("<TOKEN>", text)
    text = _UID.sub("<UID>", text)
    text = _RFC3339.sub("<TIME>", text)
    text = _RFC1123.sub("<TIME>", text)
    text = _GO_TIME.sub("<TIME>", text)
    text = _DIFF_DIR.sub(r"<\1>", text)
    text = _RESOURCE_VERSION.sub(r'\1"<RV>"', text)
    text = _DESCRIBED_VERSION.sub(r"\1<RV>", text)
    text = _GO_POINTER.sub("(<POINTER>)", text)
    text = _go_values(text)
    text = _CMP_MARK.sub(lambda m: m[0].replace("\u00a0", " "), text)
    text = _KLOG.sub(r"\1<KLOG> ", text)
    text = _CLUSTER_IP.sub("<CLUSTER-IP>", text)
    for prefix in generate_names:
        text = re.sub(rf"\b{re.escape(prefix)}{_GENERATED}\b", f"{prefix}<GEN>", text)
    return _sorted_causes(text)


_GO_VALUE = re.compile(r"(?<=Invalid value: )core\.[A-Z]\w*\{")


def _go_values(text: str) -> str:
    """Each Go ``%#v`` rendering of a value of kube-apiserver's internal types in a 422's
    ``Invalid value:`` (``core.PodTemplateSpec{...}``, which an immutable field's error
    prints whole) as
    ``core.TYPE{<GO-VALUE>}``: a dump of Go memory no published schema describes (internal
    field names and order, zero values, pointers)."""
    out, start = [], 0
    for match in _GO_VALUE.finditer(text):
        if match.start() < start:
            continue
        depth, end = 0, match.end() - 1
        for end in range(match.end() - 1, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                break
        out.append(text[start:match.end()] + "<GO-VALUE>}")
        start = end + 1
    return "".join(out) + text[start:]


def _sorted_causes(text: str) -> str:
    """Each run of a 422's ``* field: message`` lines in sorted order."""
    out: list[str] = []
    run: list[str] = []
    for line in [*text.split("\n"), None]:
        if line is not None and line.startswith("* "):
            run.append(line)
            continue
        out.extend(sorted(run))
        run = []
        if line is not None:
            out.append(line)
    return "\n".join(out)


def normalize_tables(text: str) -> str:
    """Tables in ``text`` re-laid out: cells cut at the header's column offsets, ages
    replaced in AGE-like columns, cells joined by three spaces; other lines kept."""
    out: list[str] = []
    offsets: list[int] | None = None
    ages: set[int] = set()
    for line in text.split("\n"):
        if _HEADER.fullmatch(line.rstrip()):
            offsets = [m.start() for m in re.finditer(r"(?:^|(?<=   ))\S", line)]
            names = [line[a:b].strip() for a, b in zip(offsets, [*offsets[1:], None],
                                                          strict=True)]
            ages = {i for i, name in enumerate(names) if name in _AGE_COLUMNS}
            out.append("   ".join(names))
            continue
        if offsets is None or not line.strip():
            offsets = None if not line.strip() else offsets
            out.append(line)
            continue
        cells = [line[a:b].strip() for a, b in zip(offsets, [*offsets[1:], None], strict=True)]
        cells = ["<AGE>" if i in ages and _AGE_VALUE.fullmatch(c) else c
                 for i, c in enumerate(cells)]
        out.append("   ".join(cells).rstrip())
    return "\n".join(out)
