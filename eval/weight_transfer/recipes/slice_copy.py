"""Recipe: slice-copy donor weights into matching shapes (the paper's Table 4 negative result: 4.6784 bpb,
worse than the random initialisation's 3.3923).

The first GPT-2 donor (by folder name) fills the embedding, the head (GPT-2 ties it to the embedding),
the final norm and the attention layers; the first Mamba donor, if any, fills the SSM layers (its
mixer has the target's parameter names). Target layer 2k (attention) takes GPT-2 block k, layer 2k+1
(SSM) takes Mamba block k. Each target tensor gets the donor tensor's leading slice (`target[:a, :b]
= donor[:a, :b]`); what the donor does not cover keeps its random value, in width and in depth (layers
past the donor's last block stay random). GPT-2's Conv1D weights are transposed to Linear layout; its
fused QKV is split; its 4x MLP gives W_gate the first and W_up the second ffn_hidden rows; biases and
learned positions have no place in the target and are dropped. Without a Mamba donor the SSM layers
stay random.

    hybridlm eval eval/weight_transfer/recipes/slice_copy.py --donors DIR --json
"""

import torch
from recipekit import RecipeError, load_all

MAMBA_PARAMS = ("in_proj.weight", "conv.weight", "conv.bias", "x_proj.weight", "dt_proj.weight", "dt_proj.bias")
MAMBA_PARAMS += ("A_log", "D", "out_proj.weight")


def put(target: torch.Tensor, source: torch.Tensor) -> None:
    """Copy the overlapping leading slice of `source` into `target`."""
    if target.dim() != source.dim():
        raise RecipeError(f"cannot slice a {tuple(source.shape)} tensor into {tuple(target.shape)}")
    index = tuple(slice(0, min(a, b)) for a, b in zip(target.shape, source.shape))
    target[index] = source[index].to(target.dtype)


def first_of(models: dict, model_type: str):
    return next((m for _, m in sorted(models.items()) if m.config.model_type == model_type), None)


@torch.no_grad()
def copy_gpt2(model, config, gpt2) -> None:
    sd = gpt2.state_dict()
    n, layers = gpt2.config.n_embd, gpt2.config.n_layer
    put(model.embed.weight, sd["transformer.wte.weight"])
    put(model.lm_head.weight, sd.get("lm_head.weight", sd["transformer.wte.weight"]))
    put(model.norm.weight, sd["transformer.ln_f.weight"])
    h = config.ffn_hidden
    for i in range(0, min(config.n_layer, 2 * layers), 2):
        src, dst = f"transformer.h.{i // 2}.", model.layers[i]
        qkv = sd[src + "attn.c_attn.weight"].T  # Conv1D (in, 3n) -> Linear (3n, in)
        put(dst.attn_norm.weight, sd[src + "ln_1.weight"])
        put(dst.attn.w_q.weight, qkv[:n])
        put(dst.attn.w_k.weight, qkv[n : 2 * n])
        put(dst.attn.w_v.weight, qkv[2 * n :])
        put(dst.attn.w_o.weight, sd[src + "attn.c_proj.weight"].T)
        put(dst.ffn_norm.weight, sd[src + "ln_2.weight"])
        fc = sd[src + "mlp.c_fc.weight"].T  # (4n, n)
        put(dst.ffn.w_gate.weight, fc[:h])
        put(dst.ffn.w_up.weight, fc[h:] if len(fc) > h else fc)
        put(dst.ffn.w_down.weight, sd[src + "mlp.c_proj.weight"].T)


@torch.no_grad()
def copy_mamba(model, config, mamba) -> None:
    sd, layers = mamba.state_dict(), mamba.config.num_hidden_layers
    for i in range(1, min(config.n_layer, 2 * layers), 2):
        src, dst = f"backbone.layers.{i // 2}.", model.layers[i]
        put(dst.ssm_norm.weight, sd[src + "norm.weight"])
        for name in MAMBA_PARAMS:
            put(dst.ssm.get_parameter(name), sd[src + "mixer." + name.replace("conv.", "conv1d.")])


def transfer(model, config):
    models = load_all()
    gpt2, mamba = first_of(models, "gpt2"), first_of(models, "mamba")
    if gpt2 is None:
        raise RecipeError("slice copy needs a GPT-2 donor (model_type gpt2)")
    copy_gpt2(model, config, gpt2)
    if mamba is not None:
        copy_mamba(model, config, mamba)
    return model
