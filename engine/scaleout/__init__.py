"""Scale-out over a Ray cluster: `RayPool` (ray_pool.py), an Executor that runs one LocalPool per
shard (shard.py). Imported by the command line alone, and only when a run asks for Ray."""
