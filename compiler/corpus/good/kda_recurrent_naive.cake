kernel kda_recurrent_naive {
  contract {
    math: "per (b, h), from S = 0, for each token t: S = diag(exp(g[b, h, t])) S; u = S^T k[b, h, t]; S += k[b, h, t] (beta[b, h, t] (v[b, h, t] - u))^T; o[b, h, t] = S^T (scale q[b, h, t]); st[b, h] = the final S^T"
    reference: "kernels.kda.reference.recurrent"
    symbol B { min: 1  max: 65536  doc: "batch (sequences)" }
    symbol H { min: 1  max: 1024  doc: "heads" }
    symbol T { min: 1  max: 4194304  doc: "tokens per sequence" }
    metric: rel_l2
    tolerance: 0.01
  }
  target: sm_90a
  launch { grid: [128, H, B] }
  param q {
    kind: tensor
    dtype: bf16
    shape: [B, H, T, 128]
    access: read
    align_bytes: 16
    doc: "queries, unit norm per token"
  }
  param k {
    kind: tensor
    dtype: bf16
    shape: [B, H, T, 128]
    access: read
    align_bytes: 16
    doc: "keys, unit norm per token"
  }
  param v {
    kind: tensor
    dtype: bf16
    shape: [B, H, T, 128]
    access: read
    align_bytes: 16
    doc: "values"
  }
  param g {
    kind: tensor
    dtype: f32
    shape: [B, H, T, 128]
    access: read
    align_bytes: 16
    doc: "log-space decay per key channel, <= 0"
  }
  param beta {
    kind: tensor
    dtype: f32
    shape: [B, H, T]
    access: read
    align_bytes: 16
    doc: "write strengths in (0, 1)"
  }
  param o {
    kind: tensor
    dtype: f32
    shape: [B, H, T, 128]
    access: write
    align_bytes: 16
    doc: "outputs S_t^T (scale q_t)"
  }
  param st {
    kind: tensor
    dtype: f32
    shape: [B, H, 128, 128]
    access: write
    align_bytes: 16
    doc: "final state transposed, S^T [V, K]"
  }
  region s { space: register  dtype: f32  shape: [4]  layout: per_thread  owner: "main" }
  region kt { space: register  dtype: f32  shape: [4]  layout: per_thread  owner: "main" }
  region qt { space: register  dtype: f32  shape: [4]  layout: per_thread  owner: "main" }
  region gt { space: register  dtype: f32  shape: [4]  layout: per_thread  owner: "main" }
  region tmp { space: register  dtype: f32  shape: [4]  layout: per_thread  owner: "main" }
  region vt { space: register  dtype: f32  shape: [1]  layout: per_thread  owner: "main" }
  region bt { space: register  dtype: f32  shape: [1]  layout: per_thread  owner: "main" }
  region u { space: register  dtype: f32  shape: [1]  layout: per_thread  owner: "main" }
  region ot { space: register  dtype: f32  shape: [1]  layout: per_thread  owner: "main" }
  role main {
    kind: compute
    warps: 1
    fill { dst: s }
    loop t in 0 .. T {
      copy { src_global: k[block.z, block.y, t, lane * 4]  dst_tile: kt }
      copy { src_global: q[block.z, block.y, t, lane * 4]  dst_tile: qt }
      copy { src_global: g[block.z, block.y, t, lane * 4]  dst_tile: gt }
      copy { src_global: v[block.z, block.y, t, block.x]  dst_tile: vt }
      copy { src_global: beta[block.z, block.y, t]  dst_tile: bt }
      elementwise { op: exp  dst: gt  srcs: [gt] }
      elementwise { op: mul  dst: s  srcs: [s, gt] }
      elementwise { op: mul  dst: tmp  srcs: [s, kt] }
      reduce { op: sum  src: tmp  dst: u  scope: warp }
      elementwise { op: sub  dst: u  srcs: [vt, u] }
      elementwise { op: mul  dst: u  srcs: [u, bt] }
      elementwise { op: fma  dst: s  srcs: [kt, u, s] }
      elementwise { op: mul  dst: tmp  srcs: [s, qt] }
      reduce { op: sum  src: tmp  dst: ot  scope: warp }
      elementwise { op: mul  dst: ot  srcs: [ot, 0.08838834764831845] }
      branch {
        cond: lane == 0
        then_body {
          copy { src_tile: ot  dst_global: o[block.z, block.y, t, block.x] }
        }
      }
    }
    copy { src_tile: s  dst_global: st[block.z, block.y, block.x, lane * 4] }
  }
}
