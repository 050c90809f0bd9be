"""Everything that touches a Paimon table, through pypaimon (catalog, snapshots, manifests, commits)."""
