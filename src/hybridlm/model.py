"""The hybrid attention/SSM target model, in one file (nanoGPT style).

Layer i is an attention block when i is even and a Mamba-1-style selective SSM block when i is odd:

    attention block:  x = x + W_o(attn(rope(W_q n1(x)), rope(W_k n1(x)), W_v n1(x)))
                      x = x + W_down(silu(W_gate n2(x)) * W_up n2(x))          (SwiGLU)
    SSM block:        x = x + W_out(ssm(n(x)))

Every sublayer is pre-normed (RMSNorm with weight) and residual, so zeroing its output projection
(W_o, W_down or W_out) turns it off. No biases except the SSM's depthwise conv and dt projection.
The input embedding and the output head are separate matrices. With the default config the model
has exactly 119,572,320 parameters (see `parameter_table` and docs/hybridlm.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from hybridlm.errors import EvalError

TARGET_PARAMETERS = 119_572_320


@dataclass(frozen=True)
class HybridConfig:
    vocab_size: int = 50257
    n_layer: int = 14
    d_model: int = 672
    n_head: int = 7
    ffn_hidden: int = 1353  # SwiGLU hidden width in attention blocks
    ssm_expand: int = 2
    d_state: int = 16
    d_conv: int = 4
    dt_rank: int = 42
    dt_min: float = 0.001
    dt_max: float = 0.1
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    init_std: float = 0.02
    head_init_std: float = 0.002  # small, so a random model predicts a near-uniform distribution
    scan_chunk: int = 16  # chunk length of the selective scan (numerics only, not parameters)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_head

    @property
    def d_inner(self) -> int:
        return self.ssm_expand * self.d_model

    def is_attention(self, layer: int) -> bool:
        return layer % 2 == 0


CONFIGS = {
    "full": HybridConfig(),
    # Same code, small sizes, full GPT-2 vocabulary: used by the tests.
    "tiny": HybridConfig(n_layer=2, d_model=64, n_head=2, ffn_hidden=128, dt_rank=4),
    "small": HybridConfig(n_layer=4, d_model=128, n_head=2, ffn_hidden=256, dt_rank=8),
}


def config_named(name: str) -> HybridConfig:
    if name not in CONFIGS:
        raise EvalError(f"unknown --config {name!r} (have: {', '.join(CONFIGS)})")
    return CONFIGS[name]


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return x32.type_as(x) * self.weight


def rotary(seq_len: int, head_dim: int, theta: float, device) -> tuple[torch.Tensor, torch.Tensor]:
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(seq_len, device=device, dtype=torch.float32), inv_freq)
    angles = torch.cat([angles, angles], dim=-1)  # (T, head_dim), rotate-half layout
    return angles.cos(), angles.sin()


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    rotated = torch.cat([-x2, x1], dim=-1)
    return (x * cos + rotated * sin).type_as(x)


class Attention(nn.Module):
    def __init__(self, cfg: HybridConfig):
        super().__init__()
        self.n_head, self.head_dim = cfg.n_head, cfg.head_dim
        d = cfg.d_model
        self.w_q = nn.Linear(d, d, bias=False)
        self.w_k = nn.Linear(d, d, bias=False)
        self.w_v = nn.Linear(d, d, bias=False)
        self.w_o = nn.Linear(d, d, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        shape = (B, T, self.n_head, self.head_dim)
        q = apply_rotary(self.w_q(x).view(shape).transpose(1, 2), cos, sin)
        k = apply_rotary(self.w_k(x).view(shape).transpose(1, 2), cos, sin)
        v = self.w_v(x).view(shape).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.w_o(y.transpose(1, 2).reshape(B, T, C))


class SwiGLU(nn.Module):
    def __init__(self, cfg: HybridConfig):
        super().__init__()
        self.w_gate = nn.Linear(cfg.d_model, cfg.ffn_hidden, bias=False)
        self.w_up = nn.Linear(cfg.d_model, cfg.ffn_hidden, bias=False)
        self.w_down = nn.Linear(cfg.ffn_hidden, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))


def _scan(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Inclusive scan of h_t = a_t * h_{t-1} + b_t (h_{-1} = 0) along dim 1, in log2(T) steps.

    Hillis-Steele: only products of decays in (0, 1] and sums, so it cannot overflow.
    Returns (cumulative decay prod_{s<=t} a_s, h_t). Steps alternate between two fresh buffer pairs,
    so the inputs are never written to.
    """
    T, step = a.shape[1], 1
    if torch.is_grad_enabled() and (a.requires_grad or b.requires_grad):  # out= has no autograd
        while step < T:
            b = torch.cat([b[:, :step], torch.addcmul(b[:, step:], a[:, step:], b[:, :-step])], dim=1)
            a = torch.cat([a[:, :step], a[:, step:] * a[:, :-step]], dim=1)
            step *= 2
        return a, b
    buffers: list[tuple[torch.Tensor, torch.Tensor] | None] = [None, None]
    while step < T:
        i = (step.bit_length() - 1) % 2
        pair = buffers[i]
        if pair is None:
            pair = buffers[i] = (torch.empty_like(a), torch.empty_like(b))
        a_next, b_next = pair
        b_next[:, :step] = b[:, :step]
        torch.addcmul(b[:, step:], a[:, step:], b[:, :-step], out=b_next[:, step:])
        a_next[:, :step] = a[:, :step]
        torch.mul(a[:, step:], a[:, :-step], out=a_next[:, step:])
        a, b = a_next, b_next
        step *= 2
    return a, b


def selective_scan(u, dt, A, B, C, chunk: int, channel_block: int = 96) -> torch.Tensor:
    """y_t = C_t . h_t with h_t = exp(dt_t A) h_{t-1} + dt_t B_t u_t, vectorised over the sequence.

    u, dt: (batch, T, d_inner); A: (d_inner, d_state); B, C: (batch, T, d_state). Float32 inside.
    On CPU the work is split by sequence and by blocks of channels so that the (T, channels, d_state)
    intermediates stay cache-sized (about 4x faster than one pass); on GPU it runs in one piece.
    The split does not mix channels or sequences, so it changes speed, not the recurrence.
    """
    if u.is_cuda:
        return _selective_scan(u, dt, A, B, C, chunk)
    d_inner = u.shape[-1]
    return torch.cat(
        [
            torch.cat(
                [
                    _selective_scan(
                        u[i : i + 1, :, j : j + channel_block],
                        dt[i : i + 1, :, j : j + channel_block],
                        A[j : j + channel_block],
                        B[i : i + 1],
                        C[i : i + 1],
                        chunk,
                    )
                    for j in range(0, d_inner, channel_block)
                ],
                dim=-1,
            )
            for i in range(u.shape[0])
        ],
        dim=0,
    )


def _selective_scan(u, dt, A, B, C, chunk: int) -> torch.Tensor:
    """The scan on one piece. Two levels: a parallel scan inside chunks of `chunk` steps (all chunks
    at once), a parallel scan over the chunks' final states, then each chunk adds its incoming state
    times its cumulative decay."""
    batch, T, d_inner = u.shape
    n = A.shape[-1]
    u, dt, B, C = u.float(), dt.float(), B.float(), C.float()
    pad = (-T) % chunk
    if pad:  # zero-padding at the end: decay 1, input 0, never affects earlier steps
        u, dt, B, C = (F.pad(t, (0, 0, 0, pad)) for t in (u, dt, B, C))
    nc = (T + pad) // chunk
    decay = torch.exp(dt.unsqueeze(-1) * A)  # (batch, T', d_inner, n), in (0, 1]
    inp = (dt * u).unsqueeze(-1) * B.unsqueeze(2)  # (batch, T', d_inner, n)
    decay = decay.view(batch * nc, chunk, d_inner, n)
    inp = inp.view(batch * nc, chunk, d_inner, n)
    cum_decay, h_local = _scan(decay, inp)  # states within each chunk, starting from zero
    cum_decay = cum_decay.view(batch, nc, chunk, d_inner, n)
    h_local = h_local.view(batch, nc, chunk, d_inner, n)
    # State entering each chunk: scan over the chunks' (total decay, final local state).
    _, h_end = _scan(cum_decay[:, :, -1], h_local[:, :, -1])  # (batch, nc, d_inner, n)
    h_in = torch.cat([torch.zeros_like(h_end[:, :1]), h_end[:, :-1]], dim=1)
    h = torch.addcmul(h_local, cum_decay, h_in.unsqueeze(2))
    y = torch.einsum("bctdn,bctn->bctd", h, C.view(batch, nc, chunk, n))
    return y.reshape(batch, nc * chunk, d_inner)[:, :T]


class SelectiveSSM(nn.Module):
    """Mamba-1 mixer: in-projection to channels and gates, depthwise causal conv, selective scan."""

    def __init__(self, cfg: HybridConfig):
        super().__init__()
        d, di = cfg.d_model, cfg.d_inner
        self.cfg = cfg
        self.in_proj = nn.Linear(d, 2 * di, bias=False)
        self.conv = nn.Conv1d(di, di, cfg.d_conv, groups=di, padding=cfg.d_conv - 1, bias=True)
        self.x_proj = nn.Linear(di, cfg.dt_rank + 2 * cfg.d_state, bias=False)
        self.dt_proj = nn.Linear(cfg.dt_rank, di, bias=True)
        self.A_log = nn.Parameter(torch.empty(di, cfg.d_state))
        self.D = nn.Parameter(torch.empty(di))
        self.out_proj = nn.Linear(di, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cfg, T = self.cfg, x.shape[1]
        u, gate = self.in_proj(x).chunk(2, dim=-1)
        u = F.silu(self.conv(u.transpose(1, 2))[..., :T].transpose(1, 2))
        dt, B, C = self.x_proj(u).split([cfg.dt_rank, cfg.d_state, cfg.d_state], dim=-1)
        dt = F.softplus(self.dt_proj(dt))
        A = -torch.exp(self.A_log.float())
        y = selective_scan(u, dt, A, B, C, cfg.scan_chunk).type_as(u) + u * self.D
        return self.out_proj(y * F.silu(gate))


class Block(nn.Module):
    def __init__(self, cfg: HybridConfig, layer: int):
        super().__init__()
        self.is_attention = cfg.is_attention(layer)
        if self.is_attention:
            self.attn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
            self.attn = Attention(cfg)
            self.ffn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
            self.ffn = SwiGLU(cfg)
        else:
            self.ssm_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
            self.ssm = SelectiveSSM(cfg)

    def forward(self, x, cos, sin):
        if self.is_attention:
            x = x + self.attn(self.attn_norm(x), cos, sin)
            return x + self.ffn(self.ffn_norm(x))
        return x + self.ssm(self.ssm_norm(x))


class HybridLM(nn.Module):
    def __init__(self, config: HybridConfig = HybridConfig(), seed: int = 42):
        super().__init__()
        self.config = config
        # reset_parameters sets every weight: the embedding skips its own normal init (which, on the meta
        # device, costs the import of torch's compiler, 1.5 s of every evaluation's start)
        self.embed = nn.Embedding(
            config.vocab_size, config.d_model, _weight=torch.empty(config.vocab_size, config.d_model)
        )
        self.layers = nn.ModuleList(Block(config, i) for i in range(config.n_layer))
        self.norm = RMSNorm(config.d_model, config.norm_eps)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.reset_parameters(seed)

    @torch.no_grad()
    def reset_parameters(self, seed: int = 42) -> None:
        """Deterministic given `seed`: uses its own generator, never the global RNG."""
        if any(p.is_meta for p in self.parameters()):
            return
        cfg, g = self.config, torch.Generator(device="cpu").manual_seed(seed)

        def normal(p, std):
            p.copy_(torch.randn(p.shape, generator=g) * std)

        def uniform(p, bound):
            p.copy_((torch.rand(p.shape, generator=g) * 2 - 1) * bound)

        # Output projections of residual sublayers are scaled down with depth (GPT-2 style).
        out_std = cfg.init_std / math.sqrt(2 * cfg.n_layer)
        for name, p in self.named_parameters():
            leaf = name.rsplit(".", 1)[0].rsplit(".", 1)[-1]
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            elif name == "lm_head.weight":
                normal(p, cfg.head_init_std)
            elif leaf in ("w_o", "w_down", "out_proj"):
                normal(p, out_std)
            elif leaf == "conv":
                uniform(p, 1 / math.sqrt(cfg.d_conv))  # PyTorch's default for this fan-in
            elif name.endswith("dt_proj.weight"):
                uniform(p, cfg.dt_rank**-0.5)
            elif name.endswith("dt_proj.bias"):
                # dt = softplus(bias) log-uniform in [dt_min, dt_max]; bias = inverse softplus.
                lo, hi = math.log(cfg.dt_min), math.log(cfg.dt_max)
                dt = torch.exp(torch.rand(p.shape, generator=g) * (hi - lo) + lo).clamp(min=1e-4)
                p.copy_(dt + torch.log(-torch.expm1(-dt)))
            elif name.endswith("A_log"):
                p.copy_(torch.log(torch.arange(1, cfg.d_state + 1, dtype=torch.float32)).expand_as(p))
            elif name.endswith(".D"):
                p.fill_(1.0)
            else:  # embedding, W_q/W_k/W_v, W_gate/W_up, in_proj, x_proj
                normal(p, cfg.init_std)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Token ids (batch, T) -> logits (batch, T, vocab)."""
        cfg = self.config
        cos, sin = rotary(idx.shape[1], cfg.head_dim, cfg.rope_theta, idx.device)
        x = self.embed(idx)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def build_meta(config: HybridConfig = HybridConfig()) -> HybridLM:
    """The model on the meta device: shapes only, no memory, instant."""
    with torch.device("meta"):
        return HybridLM(config)


def parameter_table(config: HybridConfig = HybridConfig()) -> list[tuple[str, str, int, int]]:
    """Rows (module, shape, parameters per instance, instances) covering every parameter once."""
    model = build_meta(config)
    rows: dict[tuple[str, str], list[int]] = {}
    for name, p in model.named_parameters():
        parts = name.split(".")
        if parts[0] == "layers":
            kind = "attention" if config.is_attention(int(parts[1])) else "ssm"
            key = (f"{kind} layer: " + ".".join(parts[2:]), "x".join(map(str, p.shape)))
        else:
            key = (name, "x".join(map(str, p.shape)))
        rows.setdefault(key, [p.numel(), 0])[1] += 1
    return [(module, shape, n, k) for (module, shape), (n, k) in rows.items()]
