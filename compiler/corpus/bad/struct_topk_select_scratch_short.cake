# expect: CAKE-STRUCT-026 at kernel.roles[0].body[0].top_k_select.scratch_values
# defect: the select's shared scratch (1024 entries) is shorter than the candidate buffer can be (C up to 2048)
kernel knn_select {
  contract {
    math: "(dist[b, i, :], idx[b, i, :]) = the k best j of ||q[b, i] - x[b, j]||^2 (smallest) among the first min(count[b, i], C) entries of cand_i[b, i, :] ranked by cand_v, rescored exactly in f32 and sorted, ties to the smaller j"
    reference: "kernels.knn.reference.select_candidates"
    symbol B { min: 1  max: 65536  doc: "independent problems (batch)" }
    symbol Q { min: 1  max: 67108864  doc: "queries per problem" }
    symbol M { min: 1  max: 2130706432  doc: "database rows per problem" }
    symbol D { min: 1  max: 4096  doc: "features (the rescore loops over them at run time)" }
    symbol C { min: 1  max: 2048  doc: "candidate slots per query (at most the scratch's 2048)" }
    symbol k { min: 1  max: 256  doc: "neighbours per query (a run-time value)" }
    constraint { expr: k <= C  doc: "the buffer holds k candidates" }
    metric: recall
    tolerance: 0.99
  }
  target: sm_90a
  launch { grid: [Q, B] }
  param q {
    kind: tensor
    dtype: bf16
    shape: [B, Q, D]
    access: read
    align_bytes: 16
    doc: "queries"
  }
  param x {
    kind: tensor
    dtype: bf16
    shape: [B, M, D]
    access: read
    align_bytes: 16
    doc: "database rows"
  }
  param cand_v {
    kind: tensor
    dtype: f32
    shape: [B, Q, C]
    access: read
    align_bytes: 16
    doc: "candidates' ranking scores (in no order)"
  }
  param cand_i {
    kind: tensor
    dtype: i32
    shape: [B, Q, C]
    access: read
    align_bytes: 16
    doc: "candidates' database rows"
  }
  param count {
    kind: tensor
    dtype: i32
    shape: [B, Q]
    access: read
    align_bytes: 16
    doc: "candidates appended per query (past C: overflowed)"
  }
  param dist {
    kind: tensor
    dtype: f32
    shape: [B, Q, k]
    access: write
    align_bytes: 16
    doc: "exact scores of the neighbours, best first"
  }
  param idx {
    kind: tensor
    dtype: i32
    shape: [B, Q, k]
    access: write
    align_bytes: 16
    doc: "database rows of the neighbours"
  }
  region sV { space: shared  dtype: f32  shape: [1024]  stages: 1 }
  region sI { space: shared  dtype: i32  shape: [1024]  stages: 1 }
  role main {
    kind: compute
    warps: 8
    top_k_select {
      values: cand_v[block.y, block.x, 0]
      indices: cand_i[block.y, block.x, 0]
      count: count[block.y, block.x]
      k: k
      query: q[block.y, block.x, 0]
      database: x[block.y, 0, 0]
      metric: l2
      scratch_values: sV
      scratch_indices: sI
      dist: dist[block.y, block.x, 0]
      idx: idx[block.y, block.x, 0]
    }
  }
}
