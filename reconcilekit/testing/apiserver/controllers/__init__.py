"""The controllers a cluster runs beside its API server, played by the server itself."""
