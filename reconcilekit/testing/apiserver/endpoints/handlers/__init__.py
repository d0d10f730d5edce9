"""The handlers of the verbs, each behind the filter chain (endpoints/handlers)."""
