"""Who may do what: kube-apiserver's RBAC authorizer, its bootstrap policy, and the
reviews that ask it (k8s.io/apiserver's authorizer and ``plugin/pkg/auth/authorizer/rbac``).

:mod:`.attributes` reads a request as the authorizer sees it (kube-apiserver's
RequestInfo), :mod:`.rbac_authorizer` decides on it from the stored Roles, ClusterRoles and
their bindings, :mod:`.bootstrap_policy` holds the roles and bindings
kube-apiserver makes when it starts (captured from it), and
:mod:`.access_reviews` answers the ``authorization.k8s.io`` reviews.
"""
