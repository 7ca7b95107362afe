"""Small CAKE IR programs for the service's tests and load benchmark.

`copy_program(name, rounds)` is a TMA ring copy (y = x) in text form that verifies
clean and compiles in about a second; each (name, rounds) is a distinct program with
a distinct cubin, so concurrent compiles of them cannot share cache entries.
"""

_COPY = """\
kernel {name} {{
  contract {{
    math: "y[i] = x[i]"
    reference: "torch.clone"
    symbol N {{ min: {block}  max: 16777216 }}
    constraint {{ expr: N % {block} == 0  doc: "whole blocks" }}
    metric: exact
  }}
  target: sm_90a
  launch {{ grid: [N / {block}] }}
  param x {{ kind: tensor  dtype: f32  shape: [N]  access: read  align_bytes: 16 }}
  param y {{ kind: tensor  dtype: f32  shape: [N]  access: write  align_bytes: 16 }}
  region tile {{ space: shared  dtype: f32  shape: [64]  stages: 2 }}
  barrier full {{ kind: mbarrier  count: 2  arrivals: 1  tx_bytes: 256 }}
  barrier empty {{ kind: mbarrier  count: 2  arrivals: 1 }}
  barrier drained {{ kind: named  count: 1  arrivals: 64 }}
  pipeline ring {{
    stages: 2
    full: "full"
    empty: "empty"
    regions: ["tile"]
    producer: "load"
    consumers: ["store"]
  }}
  role load {{
    kind: producer
    warps: 1
    branch {{
      cond: thread == 0
      then_body {{
        mbarrier_init {{ barrier: "full" }}
        mbarrier_init {{ barrier: "empty" }}
        fence {{ kind: mbarrier_init }}
      }}
    }}
    block_sync {{}}
    branch {{
      cond: elected
      then_body {{
        loop i in 0 .. {rounds} {{
          mbarrier_wait {{ barrier: empty@round(i) }}
          mbarrier_expect_tx {{ barrier: full@round(i)  bytes: 256 }}
          tma_load {{ src: x[block.x * {block} + i * 64]  dst: tile@(i % 2)  barrier: full@round(i) }}
        }}
      }}
    }}
  }}
  role store {{
    kind: consumer
    warps: 2
    block_sync {{}}
    loop i in 0 .. {rounds} {{
      mbarrier_wait {{ barrier: full@round(i) }}
      copy {{ src_tile: tile@(i % 2)  dst_global: y[block.x * {block} + i * 64] }}
      fence {{ kind: proxy_async }}
      named_barrier_sync {{ barrier: "drained" }}
      branch {{
        cond: warp == 0 && elected
        then_body {{
          mbarrier_arrive {{ barrier: empty@round(i) }}
        }}
      }}
    }}
  }}
}}
"""

# Line of the `launch` block in copy_program's text (for tests of text locations).
LAUNCH_LINE = 10


def copy_program(name="copy", rounds=4):
    """IR text of a ring copy kernel called `name` moving `rounds` 64-element tiles per block."""
    return _COPY.format(name=name, rounds=rounds, block=64 * rounds)


def padded_program(ops, name="padded"):
    """copy_program with `ops` more block_sync ops in its first role: a valid program as long as
    wanted (200,000 ops: 3.6 MB, about 3 s to parse and 60 MB to hold on the development VM)."""
    return copy_program(name).replace("    block_sync {}\n", "    block_sync {}\n" * (ops + 1), 1)
