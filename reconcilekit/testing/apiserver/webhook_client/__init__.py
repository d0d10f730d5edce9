"""Calling webhooks over HTTPS (k8s.io/apiserver/pkg/util/webhook): admission and conversion."""
