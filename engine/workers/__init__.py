"""The workers that run episodes on this machine: the seam the driver sees (executor.py), the pool
of worker processes with batched predicts (pool.py), one worker (worker.py) forked from a preloaded
server (preload.py), one episode (episode.py) and its video (video.py)."""
