"""Operations of the cluster: usage accounting, idle reclamation, metrics, reconcile."""
