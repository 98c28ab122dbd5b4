"""The twin behind the real APIs: Kubernetes REST and Prometheus HTTP API servers."""
