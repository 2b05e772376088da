"""``pmap``: the same function over shards of data on several devices.

`pmap(f)` runs `f` as an explicit per-shard function by one of three strategies
(DESIGN.md, "Sharding"): ``emulated`` (the per-shard function batched by vmap, collectives
as reductions over the batch axis: the semantic oracle), ``devices`` (one IREE module
holding every shard's program on its own device, collectives as transfers between
devices plus local math: multi_device.py) and ``collectives`` (one per-replica StableHLO
program with native collectives for XLA/PJRT and IREE's GPU targets: native.py).
"""
