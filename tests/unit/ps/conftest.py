from ps_cluster import cluster  # noqa: F401  (the in-process cluster fixture)
