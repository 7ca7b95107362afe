# expect: CAKE-CONTRACT-010 at kernel.roles[0].body[2].loop.body[4].copy
# defect: the update walks 2 of the 4 32-feature column blocks: features 64..127 of the new centroids are never written
kernel kmeans_finalize {
  contract {
    math: "c_new[b, k, :] = counts[b, k, 0] > 0 ? sums[b, k, :] / counts[b, k, 0] : c_prev[b, k, :]"
    reference: "kernels.kmeans.reference.finalize"
    symbol B { min: 1  max: 65536  doc: "independent problems" }
    symbol K { min: 1  max: 1048576  doc: "centroids per problem" }
    symbol D { min: 128  max: 128  value: 128  doc: "features (the kernel is specialized to it)" }
    constraint { expr: K % 128 == 0  doc: "K comes in whole 128-centroid blocks" }
    metric: rel_l2
    tolerance: 1e-06
  }
  target: sm_90a
  launch { grid: [K / 128, B] }
  param sums {
    kind: tensor
    dtype: f32
    shape: [B, K, D]
    access: read
    align_bytes: 16
    doc: "per-cluster feature sums"
  }
  param counts {
    kind: tensor
    dtype: i32
    shape: [B, K, 1]
    access: read
    align_bytes: 16
    doc: "per-cluster sizes"
  }
  param c_prev {
    kind: tensor
    dtype: f32
    shape: [B, K, D]
    access: read
    align_bytes: 16
    doc: "centroids before the update"
  }
  param c_new {
    kind: tensor
    dtype: f32
    shape: [B, K, D]
    access: write
    align_bytes: 16
    doc: "centroids after the update"
  }
  region cnt { space: register  dtype: f32  shape: [128, 1]  layout: row_per_thread  owner: "main" }
  region div { space: register  dtype: f32  shape: [128, 1]  layout: row_per_thread  owner: "main" }
  region s { space: register  dtype: f32  shape: [128, 32]  layout: row_per_thread  owner: "main" }
  region old {
    space: register
    dtype: f32
    shape: [128, 32]
    layout: row_per_thread
    owner: "main"
  }
  role main {
    kind: compute
    warps: 4
    copy { src_global: counts[block.y, block.x * 128, 0]  dst_tile: cnt }
    elementwise { op: max  dst: div  srcs: [cnt, 1.0] }
    loop j in 0 .. 2 {
      copy { src_global: sums[block.y, block.x * 128, j * 32]  dst_tile: s }
      copy { src_global: c_prev[block.y, block.x * 128, j * 32]  dst_tile: old }
      elementwise { op: div  dst: s  srcs: [s, div] }
      elementwise { op: select  dst: s  srcs: [cnt, s, old] }
      copy { src_tile: s  dst_global: c_new[block.y, block.x * 128, j * 32] }
    }
  }
}
