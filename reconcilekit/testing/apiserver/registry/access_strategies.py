"""The strategies of the kinds that grant or guard access to Pods: RBAC's role bindings
and PodDisruptionBudgets, as kube-apiserver 1.28 validates them.

A RoleBinding's or ClusterRoleBinding's ``roleRef`` cannot change once the
binding exists (``ValidateRoleBindingUpdate``). A PodDisruptionBudget
(``ValidatePodDisruptionBudgetSpec``) sets at most one of ``minAvailable``
and ``maxUnavailable``, each a non-negative number or a percentage of at most
100%. Messages show Go's ``%#v`` of the value, pointers included (as
addresses that only look like kube-apiserver's: clients compare them masked).
"""

from __future__ import annotations

import re
from typing import Any

from ...._foundations.go_compat import go_quote
from ..machinery.status import Cause
from ..machinery.unstructured import Obj
from ..machinery.validation import invalid, regex_error
from .strategy import Strategy

__all__ = ["DisruptionBudgetStrategy", "RoleBindingStrategy"]


def _go_role_ref(ref: Any) -> str:
    ref = ref if isinstance(ref, dict) else {}
    return (f"rbac.RoleRef{{APIGroup:{go_quote(str(ref.get('apiGroup', '')))}, "
            f"Kind:{go_quote(str(ref.get('kind', '')))}, "
            f"Name:{go_quote(str(ref.get('name', '')))}}}")


class RoleBindingStrategy(Strategy):
    """RoleBindings and ClusterRoleBindings: the role they bind is fixed."""

    def immutable(self, old: Obj, new: Obj) -> list[Cause]:
        if old.get("roleRef") == new.get("roleRef"):
            return []
        return [Cause("FieldValueInvalid", f"Invalid value: {_go_role_ref(new.get('roleRef'))}"
                      ": cannot change roleRef", "roleRef")]


_PERCENT = re.compile(r"[0-9]+%")
_PERCENT_ERROR = regex_error("a valid percent string must be a numeric string followed by an "
                             "ending '%'", "[0-9]+%", "1%", "93%")


def _go_int_or_string(value: int | str) -> str:
    if isinstance(value, int):
        return f'intstr.IntOrString{{Type:0, IntVal:{value}, StrVal:""}}'
    return f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{go_quote(value)}}}"


def _pointer(value: Any, at: int) -> str:
    return "(nil)" if value is None else f"(0xc000{0x10000 + 0x20 * at:06x})"


def _int_or_percent(value: Any, field: str) -> list[Cause]:
    """``ValidatePositiveIntOrPercent`` and ``IsNotMoreThan100Percent``."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return []
    if isinstance(value, int):
        return [] if value >= 0 else [invalid(field, value, "must be greater than or equal to 0")]
    shown = f"Invalid value: {_go_int_or_string(value)}: "
    if not _PERCENT.fullmatch(value):
        return [Cause("FieldValueInvalid", shown + _PERCENT_ERROR, field)]
    if int(value[:-1]) > 100:
        return [Cause("FieldValueInvalid", shown + "must not be greater than 100%", field)]
    return []


class DisruptionBudgetStrategy(Strategy):
    """PodDisruptionBudgets: one of minAvailable and maxUnavailable, each in bounds."""

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        least, most = spec.get("minAvailable"), spec.get("maxUnavailable")
        causes: list[Cause] = []
        if least is not None and most is not None:
            shown = (f"policy.PodDisruptionBudgetSpec{{"
                     f"MinAvailable:(*intstr.IntOrString){_pointer(least, 0)}, "
                     f"Selector:(*v1.LabelSelector){_pointer(spec.get('selector'), 1)}, "
                     f"MaxUnavailable:(*intstr.IntOrString){_pointer(most, 2)}, "
                     "UnhealthyPodEvictionPolicy:(*policy.UnhealthyPodEvictionPolicyType)"
                     f"{_pointer(spec.get('unhealthyPodEvictionPolicy'), 3)}}}")
            causes.append(Cause("FieldValueInvalid", f"Invalid value: {shown}: minAvailable "
                                "and maxUnavailable cannot be both set", "spec"))
        return (causes + _int_or_percent(least, "spec.minAvailable")
                + _int_or_percent(most, "spec.maxUnavailable"))
