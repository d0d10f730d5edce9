"""Patches of every kind kube-apiserver accepts, and server-side apply's field ownership."""
