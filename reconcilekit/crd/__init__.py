"""Custom kinds defined once, in Python: the CRD and the typed shape of the objects.

The shape of a kind's objects is a ``TypedDict`` (objects stay plain dicts;
``mypy`` checks field names); validation goes in ``typing.Annotated[...]``
markers; a :class:`CustomKind` names the kind and its versions and makes
the CustomResourceDefinition::

    class WebsiteSpec(TypedDict):
        \"\"\"What a Website serves.\"\"\"
        image: Annotated[str, MinLength(1)]
        replicas: NotRequired[Annotated[int, Minimum(0), Default(1)]]

    class Website(TypedDict):
        apiVersion: str
        kind: str
        metadata: dict[str, Any]
        spec: WebsiteSpec
        status: NotRequired[dict[str, Any]]

    WEBSITES = CustomKind(group="example.dev", kind="Website", plural="websites",
                          versions=[Version("v1", Website, storage=True)])
    WEBSITES.crd()        # the CustomResourceDefinition, a dict
    WEBSITES.resource     # a TypedResource[Website]
    await install_crds(client, [WEBSITES])  # created, Established, and listing

See the "Custom kinds" page of the documentation for every marker.
"""

from ._crd_install import CRDInstallError as CRDInstallError
from ._crd_install import install_crds as install_crds
from ._custom_kind import CustomKind as CustomKind
from ._custom_kind import CustomKindResource as CustomKindResource
from ._custom_kind import PrinterColumn as PrinterColumn
from ._custom_kind import Scale as Scale
from ._custom_kind import Version as Version
from ._markers import Default as Default
from ._markers import Description as Description
from ._markers import EmbeddedResource as EmbeddedResource
from ._markers import Format as Format
from ._markers import Int32 as Int32
from ._markers import Int64 as Int64
from ._markers import ListType as ListType
from ._markers import MapType as MapType
from ._markers import Marker as Marker
from ._markers import Maximum as Maximum
from ._markers import MaxItems as MaxItems
from ._markers import MaxLength as MaxLength
from ._markers import MaxProperties as MaxProperties
from ._markers import Minimum as Minimum
from ._markers import MinItems as MinItems
from ._markers import MinLength as MinLength
from ._markers import MinProperties as MinProperties
from ._markers import MultipleOf as MultipleOf
from ._markers import Pattern as Pattern
from ._markers import PreserveUnknownFields as PreserveUnknownFields
from ._markers import Rule as Rule
from ._markers import marked as marked

__all__ = [
    "CRDInstallError",
    "CustomKind",
    "CustomKindResource",
    "Default",
    "Description",
    "EmbeddedResource",
    "Format",
    "Int32",
    "Int64",
    "ListType",
    "MapType",
    "Marker",
    "MaxItems",
    "MaxLength",
    "MaxProperties",
    "Maximum",
    "MinItems",
    "MinLength",
    "MinProperties",
    "Minimum",
    "MultipleOf",
    "Pattern",
    "PreserveUnknownFields",
    "PrinterColumn",
    "Rule",
    "Scale",
    "Version",
    "install_crds",
    "marked",
]
