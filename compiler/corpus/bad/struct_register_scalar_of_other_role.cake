# expect: CAKE-STRUCT-010 at kernel.roles[1].body[1].branch
# defect: role `tail` branches on `cur`, a register of role `main`'s threads
kernel kmeans_update_sorted {
  contract {
    math: "sums[b, k, :] += sum over n with labels[b, n] = k of x[b, n, :]; counts[b, k] += |{n : labels[b, n] = k}|; sorted[b, i] = labels[b, order[b, i]] is non-decreasing in i"
    reference: "kernels.kmeans.reference.accumulate"
    symbol B { min: 1  max: 65536  doc: "independent problems" }
    symbol N { min: 1  max: 67108864  doc: "points per problem" }
    symbol K { min: 1  max: 1048576  doc: "centroids per problem" }
    symbol D { min: 1  max: 128  doc: "features (lanes hold 4 each)" }
    metric: rel_l2
    tolerance: 1e-05
  }
  target: sm_90a
  launch { grid: [ceil_div(N, 256), B] }
  param x {
    kind: tensor
    dtype: bf16
    shape: [B, N, D]
    access: read
    align_bytes: 16
    doc: "points"
  }
  param order {
    kind: tensor
    dtype: i64
    shape: [B, N]
    access: read
    align_bytes: 16
    doc: "points' indices sorted by label"
  }
  param sorted {
    kind: tensor
    dtype: i32
    shape: [B, N]
    access: read
    align_bytes: 16
    doc: "labels in sorted order, in [0, K)"
  }
  param sums {
    kind: tensor
    dtype: f32
    shape: [B, K, D]
    access: read_write
    align_bytes: 16
    doc: "per-cluster feature sums, added to"
  }
  param counts {
    kind: tensor
    dtype: i32
    shape: [B, K]
    access: read_write
    align_bytes: 16
    doc: "per-cluster sizes, added to"
  }
  region lab { space: register  dtype: i32  shape: [1]  layout: per_thread  owner: "main" }
  region cur { space: register  dtype: i32  shape: [1]  layout: per_thread  owner: "main" }
  region row { space: register  dtype: i64  shape: [1]  layout: per_thread  owner: "main" }
  region cnt { space: register  dtype: f32  shape: [1]  layout: per_thread  owner: "main" }
  region acc { space: register  dtype: f32  shape: [4]  layout: per_thread  owner: "main" }
  region xv { space: register  dtype: f32  shape: [4]  layout: per_thread  owner: "main" }
  region last { space: register  dtype: f32  shape: [1]  layout: per_thread  owner: "tail" }
  role main {
    kind: compute
    warps: 4
    fill { dst: acc }
    fill { dst: cnt }
    fill { dst: cur  value: -1.0 }
    loop j in 0 .. 64 {
      branch {
        cond: block.x * 256 + warp * 64 + j < N
        then_body {
          copy { src_global: sorted[block.y, block.x * 256 + warp * 64 + j]  dst_tile: lab }
          branch {
            cond: lab != cur && cur >= 0
            then_body {
              atomic { op: add  src: acc  dst: sums[block.y, cur, lane * 4] }
              branch {
                cond: lane == 0
                then_body {
                  atomic { op: add  src: cnt  dst: counts[block.y, cur] }
                }
              }
              fill { dst: acc }
              fill { dst: cnt }
            }
          }
          copy { src_tile: lab  dst_tile: cur }
          copy { src_global: order[block.y, block.x * 256 + warp * 64 + j]  dst_tile: row }
          copy { src_global: x[block.y, row, lane * 4]  dst_tile: xv }
          elementwise { op: add  dst: acc  srcs: [acc, xv] }
          elementwise { op: add  dst: cnt  srcs: [cnt, 1.0] }
        }
      }
    }
    branch {
      cond: cur >= 0
      then_body {
        atomic { op: add  src: acc  dst: sums[block.y, cur, lane * 4] }
        branch {
          cond: lane == 0
          then_body {
            atomic { op: add  src: cnt  dst: counts[block.y, cur] }
          }
        }
        fill { dst: acc }
        fill { dst: cnt }
      }
    }
  }
  role tail {
    kind: compute
    warps: 1
    fill { dst: last  value: 1.0 }
    branch {
      cond: cur >= 0
      then_body {
        atomic { op: add  src: last  dst: counts[block.y, 0] }
      }
    }
  }
}
