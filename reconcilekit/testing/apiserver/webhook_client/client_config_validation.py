"""Where a webhook is called: its decoding, defaults and validation, shared by admission
and CRD conversion.

k8s.io/apiserver's ``util/webhook`` validation: a ``WebhookClientConfig``
(``ValidateWebhookURL``, ``ValidateWebhookService``) and the review versions
a webhook accepts (``admissionReviewVersions``, ``conversionReviewVersions``).
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from ..machinery.decoding import go_base64_decode
from ..machinery.status import Cause
from ..machinery.unstructured import Obj
from ..machinery.validation import dns_subdomain_errors, invalid, invalid_slice, required

__all__ = ["check_ca_bundle", "client_config_errors", "default_client_config",
           "review_version_errors"]

_REVIEW_VERSIONS = ("v1", "v1beta1")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                "start with an alphabetic character, and end with an alphanumeric character "
                "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
                "'[a-z]([-a-z0-9]*[a-z0-9])?')")


def check_ca_bundle(config: Obj) -> None:
    """Decode a ``WebhookClientConfig``'s ``caBundle`` as Go's []byte (raises
    :class:`~..machinery.status.DecodeError`)."""
    if isinstance(config.get("caBundle"), str):
        go_base64_decode(config["caBundle"])


def default_client_config(config: Obj) -> None:
    """The v1 default of a ``WebhookClientConfig``, in place: a service's ``port: 443``."""
    if isinstance(config.get("service"), dict):
        config["service"].setdefault("port", 443)


def client_config_errors(config: Any, path: str, *, url_field: str) -> list[Cause]:
    """A ``WebhookClientConfig``: exactly one of ``url`` and ``service``, each well formed.

    ``url_field`` names the URL's field in messages (``url``)."""
    config = config if isinstance(config, dict) else {}
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [required(path, "exactly one of url or service is required")]
    if url is not None:
        return _url_errors(str(url), f"{path}.{url_field}")
    return _service_errors(service if isinstance(service, dict) else {}, f"{path}.service")


def _url_errors(url: str, field: str) -> list[Cause]:
    """``ValidateWebhookURL`` (https only)."""
    form = "; desired format: https://host[/path]"
    parsed = urllib.parse.urlsplit(url)
    causes = []
    if parsed.scheme != "https":
        causes.append(invalid(field, parsed.scheme, "'https' is the only allowed URL scheme"
                              + form))
    if not parsed.hostname and not parsed.netloc.rpartition("@")[2]:
        causes.append(invalid(field, "", "host must be provided" + form))
    if "@" in parsed.netloc:
        causes.append(invalid(field, parsed.netloc.rpartition("@")[0],
                              "user information is not permitted in the URL"))
    if parsed.fragment:
        causes.append(invalid(field, parsed.fragment, "fragments are not permitted in the URL"))
    if parsed.query:
        causes.append(invalid(field, parsed.query,
                              "query parameters are not permitted in the URL"))
    return causes


def _service_errors(service: Obj, path: str) -> list[Cause]:
    """``ValidateWebhookService``."""
    causes: list[Cause] = []
    if not service.get("name"):
        causes.append(required(f"{path}.name", "service name is required"))
    if not service.get("namespace"):
        causes.append(required(f"{path}.namespace", "service namespace is required"))
    port = service.get("port", 443)
    if not isinstance(port, int) or not 1 <= port <= 65535:
        causes.append(invalid(f"{path}.port", port, "port is not valid: must be between 1 and "
                                                    "65535, inclusive"))
    url_path = service.get("path")
    if not isinstance(url_path, str) or url_path in ("", "/"):
        return causes
    if url_path == "//":
        return [*causes, invalid(f"{path}.path", url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        causes.append(invalid(f"{path}.path", url_path, "must start with a '/'"))
    steps = url_path[1:]
    steps = steps[:-1] if steps.endswith("/") else steps
    for k, step in enumerate(steps.split("/")):
        if not step:
            causes.append(invalid(f"{path}.path", url_path, f"segment[{k}] may not be empty"))
            continue
        causes.extend(invalid(f"{path}.path", url_path, f"segment[{k}]: {m}")
                      for m in dns_subdomain_errors(step))
    return causes


def review_version_errors(versions: Any, field: str, *,
                          missing: str = "must specify one of v1, v1beta1") -> list[Cause]:
    """``admissionReviewVersions`` or ``conversionReviewVersions``: naming v1 or v1beta1."""
    versions = versions if isinstance(versions, list) else []
    if not versions:
        return [required(field, missing)]
    causes = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        if version in seen:
            causes.append(invalid(f"{field}[{i}]", version, "duplicate version"))
            continue
        seen.add(version)
        if not _DNS1035.match(str(version)) or len(str(version)) > 63:
            causes.append(invalid(f"{field}[{i}]", version, _DNS1035_MSG))
    if not seen & set(_REVIEW_VERSIONS):
        causes.append(invalid_slice(field, versions, "must include at least one of v1, "
                                                      "v1beta1"))
    return causes
