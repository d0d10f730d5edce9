"""The handlers of the verbs, each behind the filter chain (k8s.io/apiserver's
endpoints/handlers): one module per verb (``create``, ``update``, ``patch``,
``delete``, ``watch``), the path every write shares (``write_path``) and the
write options (``write_options``). Gets and lists are served by the handler chain."""
