"""Kimi Delta Attention forward for PyTorch users, in fla's interface: `chunk_kda(q, k, v, g, beta, ...)`.

    from kernels.kda.api import chunk_kda
    o, final_state = chunk_kda(q, k, v, g, beta, initial_state=h0, output_final_state=True)

Token-first layout as fla's `fla.ops.kda.chunk_kda`: q, k [B, T, H, K], v [B, T, H, V],
g [B, T, H, K] (log-space gates, or raw gate inputs with `use_gate_in_kernel`), beta
[B, T, H] (probabilities, or logits with `use_beta_sigmoid_in_kernel`), fp32 states
[N, H, K, V]; varlen through `cu_seqlens` (B = 1). The same options and defaults as fla;
what the kernels do not support (K or V other than 128, grouped value heads, fla's
training-only options) raises ValueError naming the argument.

The work runs as two CAKE IR kernels (kernels/kda/schedules.py, sm_90a): the parallel
intra-chunk phase, whose load phase also applies the optional L2 norm, gate and beta
activations (fla's formulas; the gate's per-head constants as `gate_rows`), then the
state chain split over V. Before them, in torch: beta head-first in fp32, and padding of
each sequence to whole 64-token chunks with rows that leave the result unchanged (a
zero log-gate, beta = 0, k = v = 0; a raw gate input pads with -inf, which every gate
maps to 0). `plan(...)` says what a call will launch; `phases(...)` gives its two
kernels as launches to time alone.

Registered as the torch custom op `cake::chunk_kda` with a fake implementation.
"""

import dataclasses
import functools
import itertools

import torch

from compiler.build import prebuilt
from kernels.kda import schedules
from runtime.compiled import CompiledKernelRunner

CHUNK = schedules.C
HEAD = schedules.HEAD
L2NORM_EPS = schedules.L2NORM_EPS
# fla options the forward has no use for or does not implement, and the value that is accepted.
_FLA_ONLY = {
    "allow_neg_eigval": False,
    "disable_recompute": False,
    "return_intermediate_states": False,
    "state_v_first": False,
    "cp_context": None,
    "use_graph": False,
    "max_num_seqs": None,
}


@dataclasses.dataclass(frozen=True)
class Plan:
    """What one call launches: N sequences padded to `padded_t` tokens (a whole number of chunks)."""

    n: int  # sequences (B, or len(cu_seqlens) - 1)
    heads: int
    lengths: tuple  # tokens of each sequence
    padded_t: int  # every sequence padded to this many tokens
    intra_grid: tuple  # (chunks, heads, sequences)
    chain_grid: tuple  # (heads x value slices, sequences)

    @property
    def chunks(self):
        return self.padded_t // CHUNK


def plan(batch, tokens, heads, cu_seqlens=None):
    """The launch plan for q of shape [batch, tokens, heads, K] (and cu_seqlens as a list, if varlen)."""
    if cu_seqlens is None:
        lengths = (tokens,) * batch
    else:
        bounds = [int(x) for x in cu_seqlens]
        lengths = tuple(b - a for a, b in zip(bounds, bounds[1:]))
    padded = max(CHUNK, -(-max(lengths) // CHUNK) * CHUNK)
    n = len(lengths)
    return Plan(n, heads, lengths, padded, (padded // CHUNK, heads, n), (heads * (HEAD // schedules.HALF), n))


def _fail(name, what):
    raise ValueError("%s %s" % (name, what))


def _check_tensor(name, t, shape, dtypes=None):
    if not isinstance(t, torch.Tensor):
        _fail(name, "must be a torch.Tensor, got %s" % type(t).__name__)
    if tuple(t.shape) != tuple(shape):
        _fail(name, "must have shape %s, got %s" % (list(shape), list(t.shape)))
    if dtypes is not None and t.dtype not in dtypes:
        _fail(name, "must be %s, got %s" % (" or ".join(str(d) for d in dtypes), t.dtype))


def check_arguments(q, k, v, g, beta, scale, initial_state, output_final_state, use_qk_l2norm_in_kernel,
                    use_gate_in_kernel, A_log, dt_bias, lower_bound, use_beta_sigmoid_in_kernel, cu_seqlens, extra):
    """ValueError naming the argument for anything the kernels do not take; returns the Plan."""
    for name, value in extra.items():
        if name in ("safe_gate", "cu_seqlens_cpu") or name == "chunk_size" and value == CHUNK:
            continue  # safe_gate only selects fla's kernels (the gates are handled causally here)
        if name not in _FLA_ONLY:
            raise TypeError("chunk_kda() got an unexpected keyword argument %r" % name)
        if value != _FLA_ONLY[name]:
            _fail(name, "is not supported by CAKE's chunk_kda forward (only %r)" % (_FLA_ONLY[name],))
    if not isinstance(q, torch.Tensor) or q.dim() != 4:
        _fail("q", "must be a [B, T, H, K] tensor, got %s" % (list(q.shape) if isinstance(q, torch.Tensor) else type(q).__name__))
    B, T, H, K = q.shape
    if K != HEAD:
        _fail("q", "must have head dim K = %d (the kernels are specialised to it), got K = %d" % (HEAD, K))
    if T < 1:
        _fail("q", "must have at least one token, got T = %d" % T)
    bf16 = (torch.bfloat16,)
    _check_tensor("q", q, (B, T, H, K), bf16)
    _check_tensor("k", k, (B, T, H, K), bf16)
    if not isinstance(v, torch.Tensor) or v.dim() != 4 or v.shape[:2] != (B, T):
        _fail("v", "must be a [B, T, H, V] tensor with q's B and T, got %s" % (list(v.shape) if isinstance(v, torch.Tensor) else v))
    if v.shape[2] != H:
        _fail("v", "must have q's %d heads (grouped value heads are not supported), got %d" % (H, v.shape[2]))
    if v.shape[3] != HEAD:
        _fail("v", "must have head dim V = %d, got V = %d" % (HEAD, v.shape[3]))
    _check_tensor("v", v, (B, T, H, HEAD), bf16)
    floats = (torch.float32, torch.bfloat16, torch.float16)
    _check_tensor("g", g, (B, T, H, K), floats)
    _check_tensor("beta", beta, (B, T, H), floats)
    for name, t in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta)):
        if t.device != q.device:
            _fail(name, "must be on q's device %s, got %s" % (q.device, t.device))
    if scale is not None and not (isinstance(scale, (int, float)) and scale > 0):
        _fail("scale", "must be a positive float or None, got %r" % (scale,))
    if lower_bound is not None and not (isinstance(lower_bound, (int, float)) and lower_bound < 0):
        _fail("lower_bound", "must be a negative float or None, got %r" % (lower_bound,))
    if use_gate_in_kernel:
        if A_log is None and lower_bound is None:
            _fail("A_log", "must be given when use_gate_in_kernel=True and lower_bound is not set")
        if A_log is not None:
            _check_tensor("A_log", A_log, (H,))
        if dt_bias is not None and dt_bias.numel() != H * K:
            _fail("dt_bias", "must have H * K = %d elements, got shape %s" % (H * K, list(dt_bias.shape)))
    lens = None
    if cu_seqlens is not None:
        if B != 1:
            _fail("cu_seqlens", "needs flattened inputs with B = 1, got B = %d" % B)
        if not isinstance(cu_seqlens, torch.Tensor) or cu_seqlens.dim() != 1 or cu_seqlens.numel() < 2:
            _fail("cu_seqlens", "must be a 1-D tensor of N + 1 offsets")
        if cu_seqlens.dtype not in (torch.int32, torch.int64):
            _fail("cu_seqlens", "must be int32 or int64, got %s" % cu_seqlens.dtype)
        # fla's cu_seqlens_cpu, when given, is the host copy: the plan needs no device sync.
        host = extra.get("cu_seqlens_cpu")
        if host is not None and (len(host) != cu_seqlens.numel() or (isinstance(host, torch.Tensor) and host.is_cuda)):
            _fail("cu_seqlens_cpu", "must be a host copy of cu_seqlens (%d offsets)" % cu_seqlens.numel())
        source = host if host is not None else cu_seqlens
        lens = [int(x) for x in (source.tolist() if isinstance(source, torch.Tensor) else source)]
        if lens[0] != 0 or lens[-1] != T or any(b < a for a, b in zip(lens, lens[1:])):
            _fail("cu_seqlens", "must rise from 0 to T = %d, got %s" % (T, lens if len(lens) <= 8 else lens[:8] + ["..."]))
    p = plan(B, T, H, lens)
    if initial_state is not None:
        _check_tensor("initial_state", initial_state, (p.n, H, K, HEAD), (torch.float32,))
        if initial_state.device != q.device:
            _fail("initial_state", "must be on q's device %s, got %s" % (q.device, initial_state.device))
    if not isinstance(output_final_state, bool):
        _fail("output_final_state", "must be a bool, got %r" % (output_final_state,))
    return p


def gate_rows(A_log, dt_bias, lower_bound, heads, device, keys=HEAD):
    """fla's in-kernel gate as s f(m x + a) per (head, key channel), f = sigmoid when lower_bound is given,
    else softplus: (f's name, the rows [H 3, K] fp32 the intra kernel reads: m, a, s per head).
    lower_bound sigmoid(exp(A_log) (x + dt_bias)): m = exp(A_log) (1 without A_log), a = m dt_bias, s = lower_bound;
    -exp(A_log) softplus(x + dt_bias): m = 1, a = dt_bias, s = -exp(A_log)."""
    if dt_bias is None:
        bias = torch.zeros(heads, keys, device=device)
    else:
        bias = dt_bias.to(device, torch.float32).view(heads, keys)
    decay = None if A_log is None else A_log.to(device, torch.float32).exp().view(heads, 1).expand(heads, keys)
    if lower_bound is not None:
        m = torch.ones_like(bias) if decay is None else decay
        rows = (m, m * bias, torch.full_like(bias, lower_bound))
    else:
        rows = (torch.ones_like(bias), bias, -decay)
    return ("sigmoid" if lower_bound is not None else "softplus"), torch.stack(rows, 1).view(heads * 3, keys)


def gate(g, A_log, dt_bias, lower_bound):
    """fla's in-kernel gate, in fp32, as the kernel computes it (`gate_rows`): lower_bound * sigmoid(exp(A_log)
    (g + dt_bias)) when lower_bound is given (without A_log: lower_bound * sigmoid(g + dt_bias)), else
    -exp(A_log) softplus(g + dt_bias)."""
    H, K = g.shape[-2:]
    fn, rows = gate_rows(A_log, dt_bias, lower_bound, H, g.device, K)
    m, a, s = rows.view(H, 3, K).unbind(1)
    f = torch.sigmoid if fn == "sigmoid" else torch.nn.functional.softplus
    return s * f(g.float() * m + a)


def l2norm(x):
    """fla's l2norm_fwd: x / sqrt(sum x^2 + eps), in fp32, back in x's dtype."""
    xf = x.float()
    return (xf * torch.rsqrt((xf * xf).sum(-1, keepdim=True) + L2NORM_EPS)).to(x.dtype)


def _pad(x, p, varlen, value=0.0):
    """[B, T, ...] -> [N, padded_t, ...]: each sequence at the start of its row, `value` after it."""
    if not varlen:
        T = x.shape[1]
        if T == p.padded_t:
            return x.contiguous()
        return torch.nn.functional.pad(x, (0, 0) * (x.dim() - 2) + (0, p.padded_t - T), value=value)
    out = x.new_full((p.n, p.padded_t) + tuple(x.shape[2:]), value)
    start = 0
    for i, n in enumerate(p.lengths):
        out[i, :n] = x[0, start:start + n]
        start += n
    return out


def _unpad(o, p, varlen, T):
    if not varlen:
        return o[:, :T] if p.padded_t != T else o
    return torch.cat([o[i, :n] for i, n in enumerate(p.lengths)], 0)[None]


@functools.lru_cache(maxsize=None)
def _intra(scale, gate_fn, g_dtype, l2norm, beta_sigmoid):
    kernel = schedules.intra_sm90a(scale=scale, gate=gate_fn, g_dtype=g_dtype, l2norm=l2norm, beta_sigmoid=beta_sigmoid)
    return CompiledKernelRunner(prebuilt.load(kernel, what="KDA intra-chunk phase"))


@functools.lru_cache(maxsize=None)
def _chain():
    return CompiledKernelRunner(prebuilt.load(schedules.chain_sm90a(), what="KDA state chain"))


def _prepare(q, k, v, g, beta, scale, initial_state, use_qk_l2norm, use_gate, A_log, dt_bias, lower_bound,
             use_beta_sigmoid, varlen, p):
    """The two kernels (runners) and their arguments for checked arguments: (intra, intra args, chain, chain args,
    o, ht), o and ht padded."""
    B, T, H, K = q.shape
    if not q.is_cuda or torch.cuda.get_device_capability(q.device) != (9, 0):
        raise ValueError("q must be on an sm_90 (Hopper) CUDA device for CAKE's chunk_kda, got %s" % q.device)
    g_dtype = "bf16" if g.dtype == torch.bfloat16 else "f32"
    if g_dtype == "f32":
        g = g.float()
    # As fla: A_log, dt_bias and lower_bound are unused without the in-kernel gate.
    gate_fn, rows = gate_rows(A_log, dt_bias, lower_bound, H, q.device) if use_gate else (None, None)
    qp, kp, vp = (_pad(t, p, varlen) for t in (q, k, v))
    gp = _pad(g, p, varlen, float("-inf") if use_gate else 0.0)  # the pad rows' log-gate is 0 either way
    n, tp = p.n, p.padded_t
    dev = q.device
    bp = torch.empty((n, H, tp), dtype=torch.float32, device=dev)
    bp.copy_(_pad(beta, p, varlen).transpose(1, 2))  # head-first fp32, one pass
    ws = {name: torch.empty((n, H, tp, schedules.C if name == "pm" else HEAD), dtype=torch.bfloat16, device=dev)
          for name in schedules.WORKSPACE if name != "gl"}
    ws["gl"] = torch.empty((n, H, tp // CHUNK, HEAD), dtype=torch.float32, device=dev)
    if initial_state is None:
        h0t = torch.zeros((n, H, HEAD, K), dtype=torch.float32, device=dev)
    else:
        h0t = initial_state.transpose(-1, -2).contiguous()
    o = torch.empty((n, tp, H, HEAD), dtype=torch.bfloat16, device=dev)
    ht = torch.empty((n, H, HEAD, K), dtype=torch.float32, device=dev)
    flat = lambda t: t.reshape(n * tp, H * HEAD)  # noqa: E731  [N, T, H, K] -> [N T, H K], no copy
    intra_args = dict(q=flat(qp), k=flat(kp), v=flat(vp), g=flat(gp), beta=bp, **ws)
    if use_gate:
        intra_args["gate_rows"] = rows
    intra = _intra(float(scale), gate_fn, g_dtype, bool(use_qk_l2norm), bool(use_beta_sigmoid))
    return intra, intra_args, _chain(), dict(h0t=h0t, o=o.view(n, tp, H * HEAD), ht=ht, **ws), o, ht


def _forward(q, k, v, g, beta, scale, initial_state, use_qk_l2norm, use_gate, A_log, dt_bias, lower_bound,
             use_beta_sigmoid, varlen, p):
    """(o [B, T, H, V] bf16, final state [N, H, K, V] f32) of checked arguments."""
    intra, intra_args, chain, chain_args, o, ht = _prepare(q, k, v, g, beta, scale, initial_state, use_qk_l2norm,
                                                           use_gate, A_log, dt_bias, lower_bound, use_beta_sigmoid,
                                                           varlen, p)
    intra(**intra_args)
    chain(**chain_args)
    return _unpad(o, p, varlen, q.shape[1]), ht.transpose(-1, -2)


def phases(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False, use_qk_l2norm_in_kernel=False,
           use_gate_in_kernel=False, A_log=None, dt_bias=None, lower_bound=None, use_beta_sigmoid_in_kernel=False,
           cu_seqlens=None, **kwargs):
    """chunk_kda's two kernels as zero-argument launches {"intra": f, "chain": f} on these inputs (the torch
    passes done once, up front), for timing each phase alone; "intra_args" holds the intra kernel's
    arguments (the inputs as given: fla's options run inside it)."""
    p = check_arguments(q, k, v, g, beta, scale, initial_state, output_final_state, use_qk_l2norm_in_kernel, use_gate_in_kernel,
                        A_log, dt_bias, lower_bound, use_beta_sigmoid_in_kernel, cu_seqlens, kwargs)
    scale = q.shape[-1] ** -0.5 if scale is None else float(scale)
    intra, intra_args, chain, chain_args, _, _ = _prepare(q, k, v, g, beta, scale, initial_state,
                                                          use_qk_l2norm_in_kernel, use_gate_in_kernel, A_log, dt_bias,
                                                          lower_bound, use_beta_sigmoid_in_kernel,
                                                          cu_seqlens is not None, p)
    return {"intra": lambda: intra(**intra_args), "chain": lambda: chain(**chain_args), "intra_args": intra_args}


@torch.library.custom_op("cake::chunk_kda", mutates_args=())
def _chunk_kda_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor,
                  scale: float, initial_state: torch.Tensor | None, use_qk_l2norm_in_kernel: bool,
                  use_gate_in_kernel: bool, A_log: torch.Tensor | None, dt_bias: torch.Tensor | None,
                  lower_bound: float | None, use_beta_sigmoid_in_kernel: bool,
                  seq_lens: list[int] | None) -> tuple[torch.Tensor, torch.Tensor]:
    B, T, H, _ = q.shape
    p = plan(B, T, H, None if seq_lens is None else [0] + list(itertools.accumulate(seq_lens)))
    o, ht = _forward(q, k, v, g, beta, scale, initial_state, use_qk_l2norm_in_kernel, use_gate_in_kernel, A_log,
                     dt_bias, lower_bound, use_beta_sigmoid_in_kernel, seq_lens is not None, p)
    return o.contiguous(), ht.contiguous()


@_chunk_kda_op.register_fake
def _(q, k, v, g, beta, scale, initial_state, use_qk_l2norm_in_kernel, use_gate_in_kernel, A_log, dt_bias,
      lower_bound, use_beta_sigmoid_in_kernel, seq_lens):
    B, T, H, K = q.shape
    n = B if seq_lens is None else len(seq_lens)
    return torch.empty_like(v), q.new_empty((n, H, K, v.shape[-1]), dtype=torch.float32)


def chunk_kda(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
              use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False, A_log=None, dt_bias=None, lower_bound=None,
              use_beta_sigmoid_in_kernel=False, cu_seqlens=None, **kwargs):
    """KDA forward as fla's chunk_kda: (o [B, T, H, V] bf16, final state [N, H, K, V] fp32 or None).

    Per head, S_t = (I - beta_t k_t k_t^T) diag(exp(g_t)) S_{t-1} + beta_t k_t v_t^T and
    o_t = S_t^T (scale q_t), scale = K^-0.5 unless given, S_0 = initial_state (zero when None).
    With cu_seqlens (B = 1), each sequence starts from its own initial state.
    """
    p = check_arguments(q, k, v, g, beta, scale, initial_state, output_final_state, use_qk_l2norm_in_kernel,
                        use_gate_in_kernel, A_log, dt_bias, lower_bound, use_beta_sigmoid_in_kernel, cu_seqlens, kwargs)
    scale = q.shape[-1] ** -0.5 if scale is None else float(scale)
    o, ht = _chunk_kda_op(q, k, v, g, beta, scale, initial_state, use_qk_l2norm_in_kernel, use_gate_in_kernel,
                          A_log, dt_bias, None if lower_bound is None else float(lower_bound),
                          use_beta_sigmoid_in_kernel, None if cu_seqlens is None else list(p.lengths))
    return o, (ht if output_final_state else None)
