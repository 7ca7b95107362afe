"""Flash-KMeans: torch oracles and CAKE IR schedules (fused arg-min assignment, centroid update)."""
