"""How tensors move between replicas: cross-device ops and communication options."""
