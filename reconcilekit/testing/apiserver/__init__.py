"""An in-process kube-apiserver: the emulation that :mod:`reconcilekit.testing` serves.

Its public names (:class:`~reconcilekit.testing.APIServer`,
:class:`~reconcilekit.testing.Faults`) are exported by :mod:`reconcilekit.testing`
alone; every module below is private to the package, whatever its name.

The layout follows k8s.io/apiserver's own parts, so that a reader who knows
them finds each counterpart. Bottom to top (a part imports only parts below
it; ``tests/testing/test_apiserver_layout.py`` holds the code to it):

1. ``extra.py``: the ``testing`` extra the server needs (checked when one is made).
2. ``kubeconfig.py``: the kubeconfig document a client of the server uses.
3. ``machinery/``: what every part shares (k8s.io/apimachinery): the object
   alias, ``kind: Status`` errors, the served resource types, what a request
   is about, name and metadata validation, decoding into the kinds' Go types.
4. ``patching/``: JSON patch, merge patch, strategic merge patch and its schemas,
   server-side apply's field ownership.
5. ``storage/``: the versioned store (objects by resource, the resourceVersion
   counter, each resource's event history), the watch cache's watchers, sharded
   list/watch, a paged list's continue tokens.
6. ``registry/``: each kind's strategy (kube-apiserver's REST strategies:
   defaults, preparation, validation, graceful deletion) in one table every
   part asks, the generic store that applies them (the registry's rules:
   optimistic concurrency, graceful deletion, finalizers), and
   the registry store that runs a write (create, GuaranteedUpdate, delete),
   with admission passed in as functions.
7. ``webhook_client/``: calling a webhook over HTTPS (k8s.io/apiserver's
   util/webhook), and the validation of where one is called.
8. ``apiextensions/``: CRDs: their validation, the types they serve,
   structural schemas, CEL rules, conversion between versions.
9. ``authorization/``: the RBAC authorizer over the stored roles and bindings,
    kube-apiserver's bootstrap policy, the access reviews that ask it.
10. ``admission/``: the admission chain (OwnerReferencesPermissionEnforcement,
    then the webhooks), webhook configurations, match conditions.
11. ``controllers/``: what kube-controller-manager and the apiextensions
    server do on their own (namespace lifecycle, CRD establishing and cleanup,
    garbage collection and its owner index, ClusterRole aggregation), run
    right after the write that triggers them.
12. ``endpoints/``: the HTTP front: the filter chain (authentication,
    impersonation, authorization first), the handlers of each verb (create,
    update, patch, apply, delete: they decode the request and hand the
    registry store its admission functions), content negotiation, tables,
    discovery and OpenAPI documents, access and token reviews, token
    requests, fault injection.
13. ``kube_apiserver.py``: :class:`APIServer`, which puts them together and serves.
"""

__all__: list[str] = []
